//! Why an object of a snapshot (its head, its root, a piece) is not what
//! its key says: a follower keeps listing the bucket instead, and the log
//! says which object and why.

use super::FORMAT;

#[derive(Debug)]
pub enum Malformed {
    NotJson(serde_json::Error),
    /// Of another format than this build follows (`found`, as written).
    Format {
        found: String,
    },
    /// A field it must have.
    Missing(&'static str),
    /// An entry (`of` a directory or a file) that does not read.
    Entry {
        of: &'static str,
        entry: String,
    },
}

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Malformed::NotJson(_) => f.write_str("not JSON"),
            Malformed::Format { found } => {
                write!(f, "format {found} (this build follows {FORMAT})")
            }
            Malformed::Missing(field) => write!(f, "no {field}"),
            Malformed::Entry { of, entry } => write!(f, "a malformed {of} entry: {entry}"),
        }
    }
}

impl std::error::Error for Malformed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Malformed::NotJson(e) => Some(e),
            _ => None,
        }
    }
}
