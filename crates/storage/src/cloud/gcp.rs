//! The Google Cloud Storage client: its XML API (ListObjectsV2 and GETs
//! as S3's), the base URL of an emulator or another endpoint, and
//! Google's credentials chain.

use std::sync::Arc;

use object_store::gcp::GoogleCloudStorageBuilder;

use super::{Clients, Credentials, Setup, Store, credentials, credentials::env_set};
use crate::StorageError;

/// Google's endpoint.
const DEFAULT_ENDPOINT: &str = "https://storage.googleapis.com";

/// gcloud's application default credentials, as object_store reads them.
fn adc_file() -> Option<std::path::PathBuf> {
    let home = std::env::var_os("HOME")?;
    Some(std::path::Path::new(&home).join(".config/gcloud/application_default_credentials.json"))
}

/// Whether credentials are set before the chain's last step (the
/// metadata server): a service account or the application default
/// credentials.
fn at_hand() -> bool {
    [
        "GOOGLE_SERVICE_ACCOUNT",
        "GOOGLE_SERVICE_ACCOUNT_PATH",
        "GOOGLE_SERVICE_ACCOUNT_KEY",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GOOGLE_BEARER_TOKEN",
    ]
    .iter()
    .any(|v| env_set(v))
        || adc_file().is_some_and(|f| f.exists())
}

/// Every place Google's chain looks, in its order.
fn looked() -> String {
    let adc = adc_file().map_or_else(
        || "~/.config/gcloud/application_default_credentials.json (no HOME)".to_string(),
        |f| f.display().to_string(),
    );
    format!(
        "a service account (GOOGLE_SERVICE_ACCOUNT, GOOGLE_APPLICATION_CREDENTIALS), \
         the application default credentials {adc} (gcloud auth application-default login), \
         the metadata server"
    )
}

/// The GCS clients for `setup`'s bucket.
pub(super) fn clients(setup: &Setup) -> Result<Clients, StorageError> {
    let (url, opts) = (setup.url, setup.opts);
    let anonymous = matches!(opts.credentials, Credentials::Anonymous);
    let at_hand = anonymous || at_hand();
    let endpoint = setup
        .endpoint
        .clone()
        .unwrap_or_else(|| DEFAULT_ENDPOINT.to_string());
    let build = |retries: bool| -> Result<Arc<dyn Store>, StorageError> {
        let mut b = GoogleCloudStorageBuilder::from_env()
            .with_http_connector(setup.connector())
            .with_bucket_name(url.bucket())
            .with_base_url(&endpoint)
            .with_client_options(setup.client_options(at_hand))
            .with_retry(setup.retry(retries));
        let failed = |e: object_store::Error| setup.cannot_set_up(e);
        if anonymous {
            b = b.with_skip_signature(true);
        } else if !at_hand {
            let inner = b.clone().build().map_err(failed)?;
            b = b.with_credentials(credentials::Told::new(
                true,
                inner.credentials().clone(),
                looked(),
            ));
        }
        Ok(Arc::new(b.build().map_err(failed)?))
    };
    Ok(Clients {
        store: build(true)?,
        probe: build(false)?,
        endpoint,
    })
}
