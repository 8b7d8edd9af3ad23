//! What an index file holds in one version, as cached.

use std::sync::Arc;
use std::time::SystemTime;

use novelfs_library::NovelError;
use novelfs_library::PageFormat as Format;

/// What an index file holds in one version: the text and the JSON, or,
/// when the call fails (a chapter that cannot be read, the tool switched
/// off), the error line in the text and `{"error": "错误：…"}` in the JSON,
/// which parses as every `.json` file does.
#[derive(Clone)]
pub(crate) struct Rendered {
    pub(crate) version: u64,
    pub(crate) text: Arc<Vec<u8>>,
    pub(crate) json: Arc<Vec<u8>>,
    /// The newest mtime of the sources it was made from.
    pub(crate) mtime: SystemTime,
}

impl Rendered {
    /// The bytes of `format`.
    pub(crate) fn bytes(&self, format: Format) -> Arc<Vec<u8>> {
        match format {
            Format::Text => self.text.clone(),
            Format::Json => self.json.clone(),
        }
    }

    pub(super) fn weight(&self) -> usize {
        256 + self.text.len()
            + if Arc::ptr_eq(&self.text, &self.json) {
                0
            } else {
                self.json.len()
            }
    }

    /// The rendering of a call that fails with `error`.
    pub(super) fn failed(version: u64, error: &NovelError, mtime: SystemTime) -> Rendered {
        Rendered {
            version,
            text: Arc::new(error.error_line().into_bytes()),
            json: Arc::new(error.error_json().into_bytes()),
            mtime,
        }
    }
}
