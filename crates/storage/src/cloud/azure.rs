//! The Azure Blob Storage client: a container of a storage account, the
//! account's endpoint (an emulator's, as Azurite serves it, or a
//! sovereign cloud's), and Azure's credentials chain.

use std::sync::Arc;

use object_store::azure::MicrosoftAzureBuilder;

use super::{
    Clients, Credentials, Setup, Store, aws::host_is_address, credentials, credentials::env_set,
};
use crate::StorageError;

/// Whether credentials are set before the chain's last step (managed
/// identity): the account's key, a SAS, a token, a service principal,
/// workload identity or the Azure CLI.
fn at_hand() -> bool {
    [
        "AZURE_STORAGE_ACCOUNT_KEY",
        "AZURE_STORAGE_ACCESS_KEY",
        "AZURE_STORAGE_MASTER_KEY",
        "AZURE_STORAGE_SAS_KEY",
        "AZURE_STORAGE_SAS_TOKEN",
        "AZURE_STORAGE_TOKEN",
        "AZURE_STORAGE_CLIENT_SECRET",
        "AZURE_CLIENT_SECRET",
        "AZURE_FEDERATED_TOKEN_FILE",
    ]
    .iter()
    .any(|v| env_set(v))
        || std::env::var("AZURE_USE_AZURE_CLI").is_ok_and(|v| v.eq_ignore_ascii_case("true"))
}

/// Every place Azure's chain looks, in its order.
const LOOKED: &str = "the account's key or a SAS (AZURE_STORAGE_ACCOUNT_KEY, AZURE_STORAGE_SAS_KEY), \
     a service principal (AZURE_CLIENT_ID, AZURE_CLIENT_SECRET, AZURE_TENANT_ID), \
     workload identity (AZURE_FEDERATED_TOKEN_FILE), the Azure CLI (AZURE_USE_AZURE_CLI=true), \
     managed identity";

/// The account named by `--account`, else by the environment.
fn account(given: Option<&str>) -> Option<String> {
    given
        .map(str::to_string)
        .or_else(|| std::env::var("AZURE_STORAGE_ACCOUNT_NAME").ok())
        .or_else(|| std::env::var("AZURE_STORAGE_ACCOUNT").ok())
        .filter(|a| !a.is_empty())
}

/// Whether `name` is a storage account's name: 3 to 24 lower-case letters
/// and digits (an emulator's `devstoreaccount1` is one).
fn is_account_name(name: &str) -> bool {
    (3..=24).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// The account's URL: an address endpoint (an emulator's) followed by the
/// account, as Azurite serves it; a named endpoint as given (a sovereign
/// cloud's `https://ACCOUNT.blob.core.chinacloudapi.cn`); else Azure's.
fn account_url(endpoint: Option<&str>, account: &str) -> String {
    match endpoint {
        Some(ep) if host_is_address(ep) => format!("{ep}/{account}"),
        Some(ep) => ep.to_string(),
        None => format!("https://{account}.blob.core.windows.net"),
    }
}

/// The Azure clients for `setup`'s container.
pub(super) fn clients(setup: &Setup) -> Result<Clients, StorageError> {
    let (url, opts) = (setup.url, setup.opts);
    let account = account(opts.account.as_deref()).ok_or_else(|| {
        StorageError::other(format!(
            "{url}: no storage account: give --account NAME or set AZURE_STORAGE_ACCOUNT_NAME"
        ))
    })?;
    if !is_account_name(&account) {
        return Err(StorageError::other(format!(
            "{url}: {account:?} is not a storage account's name (3 to 24 lower-case letters and digits)"
        )));
    }
    let anonymous = matches!(opts.credentials, Credentials::Anonymous);
    let at_hand = anonymous || at_hand();
    let endpoint = account_url(setup.endpoint.as_deref(), &account);
    let build = |retries: bool| -> Result<Arc<dyn Store>, StorageError> {
        let mut b = MicrosoftAzureBuilder::from_env()
            .with_http_connector(setup.connector())
            .with_account(&account)
            .with_container_name(url.bucket())
            .with_endpoint(endpoint.clone())
            .with_allow_http(endpoint.starts_with("http://"))
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
                LOOKED.to_string(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_emulators_address_is_followed_by_the_account() {
        assert_eq!(
            account_url(Some("http://127.0.0.1:10000"), "devstoreaccount1"),
            "http://127.0.0.1:10000/devstoreaccount1"
        );
        assert_eq!(
            account_url(Some("https://shelf.blob.core.chinacloudapi.cn"), "shelf"),
            "https://shelf.blob.core.chinacloudapi.cn"
        );
        assert_eq!(
            account_url(None, "shelf"),
            "https://shelf.blob.core.windows.net"
        );
        assert!(is_account_name("devstoreaccount1"));
        assert!(!is_account_name("Shelf"));
        assert!(!is_account_name("a/b"));
    }
}
