//! Named profiles of the AWS shared files (`~/.aws/credentials` and
//! `~/.aws/config`, or where `AWS_SHARED_CREDENTIALS_FILE` and
//! `AWS_CONFIG_FILE` point), which object_store does not read: static keys
//! and the region only. A profile that gets its keys another way
//! (`credential_process`, SSO, `role_arn`) is refused with a message that
//! says so, rather than silently falling through to another credential.

use std::collections::HashMap;
use std::path::PathBuf;

/// What a profile gives.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Profile {
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub session_token: Option<String>,
    pub region: Option<String>,
    /// A key naming a way to get credentials that is not supported here.
    pub unsupported: Option<String>,
}

impl std::fmt::Debug for Profile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Profile")
            .field("access_key_id", &self.access_key_id.as_ref().map(|_| "…"))
            .field("region", &self.region)
            .field("unsupported", &self.unsupported)
            .finish_non_exhaustive()
    }
}

/// The sections of an INI text: `[name]` to its `key = value` pairs
/// (keys in lower case; `#` and `;` lines are comments).
fn sections(text: &str) -> HashMap<String, HashMap<String, String>> {
    let mut out: HashMap<String, HashMap<String, String>> = HashMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let name = name.trim().to_string();
            out.entry(name.clone()).or_default();
            current = Some(name);
        } else if let (Some(section), Some((k, v))) = (&current, line.split_once('=')) {
            out.get_mut(section)
                .unwrap()
                .insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    out
}

/// The profile `name` from the texts of the credentials and config files;
/// `None` when neither has it. Keys in the credentials file win.
pub fn parse(name: &str, credentials: &str, config: &str) -> Option<Profile> {
    let creds = sections(credentials);
    let conf = sections(config);
    let config_section = if name == "default" {
        "default".to_string()
    } else {
        format!("profile {name}")
    };
    let a = creds.get(name);
    let b = conf.get(&config_section);
    if a.is_none() && b.is_none() {
        return None;
    }
    let get = |key: &str| {
        a.and_then(|s| s.get(key))
            .or_else(|| b.and_then(|s| s.get(key)))
            .cloned()
    };
    let unsupported = [
        "credential_process",
        "sso_session",
        "sso_start_url",
        "role_arn",
    ]
    .into_iter()
    .find(|k| get(k).is_some())
    .map(str::to_string);
    Some(Profile {
        access_key_id: get("aws_access_key_id"),
        secret_access_key: get("aws_secret_access_key"),
        session_token: get("aws_session_token"),
        region: get("region"),
        unsupported,
    })
}

fn home_file(var: &str, rel: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(rel)))
}

/// The profile `name` from the shared files.
pub fn load(name: &str) -> Option<Profile> {
    let read = |p: Option<PathBuf>| {
        p.and_then(|p| std::fs::read_to_string(p).ok())
            .unwrap_or_default()
    };
    let credentials = read(home_file("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials"));
    let config = read(home_file("AWS_CONFIG_FILE", ".aws/config"));
    parse(name, &credentials, &config)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CREDENTIALS: &str = "\
[default]
aws_access_key_id = AKIDEFAULT
aws_secret_access_key = default-secret

[reader]
# a comment
aws_access_key_id=AKIREADER
aws_secret_access_key=reader-secret
aws_session_token = tok
";
    const CONFIG: &str = "\
[default]
region = eu-west-1

[profile reader]
region = ap-east-1

[profile sso]
sso_session = corp
region = us-west-2
";

    #[test]
    fn a_profile_takes_keys_from_credentials_and_region_from_config() {
        let p = parse("reader", CREDENTIALS, CONFIG).unwrap();
        assert_eq!(p.access_key_id.as_deref(), Some("AKIREADER"));
        assert_eq!(p.secret_access_key.as_deref(), Some("reader-secret"));
        assert_eq!(p.session_token.as_deref(), Some("tok"));
        assert_eq!(p.region.as_deref(), Some("ap-east-1"));
        assert_eq!(p.unsupported, None);
        let d = parse("default", CREDENTIALS, CONFIG).unwrap();
        assert_eq!(d.access_key_id.as_deref(), Some("AKIDEFAULT"));
        assert_eq!(d.region.as_deref(), Some("eu-west-1"));
    }

    #[test]
    fn an_sso_profile_is_named_unsupported_and_a_missing_one_is_none() {
        let p = parse("sso", CREDENTIALS, CONFIG).unwrap();
        assert_eq!(p.unsupported.as_deref(), Some("sso_session"));
        assert_eq!(p.access_key_id, None);
        assert!(parse("nobody", CREDENTIALS, CONFIG).is_none());
    }

    #[test]
    fn a_profile_debug_shows_no_key() {
        let p = parse("reader", CREDENTIALS, CONFIG).unwrap();
        let text = format!("{p:?}");
        assert!(
            !text.contains("AKIREADER") && !text.contains("reader-secret"),
            "{text}"
        );
    }
}
