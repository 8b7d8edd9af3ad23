//! The S3 client: the AWS credentials chain (environment, the shared
//! files' profiles, web identity, container and instance metadata), the
//! region, and path or virtual-hosted style for an endpoint.

use std::sync::Arc;

use object_store::StaticCredentialProvider;
use object_store::aws::{AmazonS3Builder, AwsCredential};

use super::{Clients, Credentials, Setup, Store, credentials, profile};
use crate::StorageError;

/// Whether the endpoint's host cannot take a bucket name in front of it.
pub(super) fn host_is_address(endpoint: &str) -> bool {
    let authority = endpoint.split_once("://").map_or(endpoint, |(_, a)| a);
    let host = if authority.starts_with('[') {
        return true;
    } else {
        authority.rsplit_once(':').map_or(authority, |(h, _)| h)
    };
    host == "localhost" || host.parse::<std::net::Ipv4Addr>().is_ok()
}

/// `http://BUCKET.HOST:PORT` for the endpoint `http://HOST:PORT`.
fn virtual_hosted(endpoint: &str, bucket: &str) -> String {
    match endpoint.split_once("://") {
        Some((scheme, authority)) => format!("{scheme}://{bucket}.{authority}"),
        None => endpoint.to_string(),
    }
}

fn static_provider(
    key_id: String,
    secret: String,
    token: Option<String>,
) -> Arc<StaticCredentialProvider<AwsCredential>> {
    Arc::new(StaticCredentialProvider::new(AwsCredential {
        key_id,
        secret_key: secret,
        token,
    }))
}

/// The S3 clients for `setup`'s bucket.
pub(super) fn clients(setup: &Setup) -> Result<Clients, StorageError> {
    let (url, opts, endpoint) = (setup.url, setup.opts, &setup.endpoint);
    // The region and the keys of a profile: the one named, or (when the
    // environment holds no keys) AWS_PROFILE's or the default one.
    let env_keys = std::env::var_os("AWS_ACCESS_KEY_ID").is_some();
    let profile_name = opts.profile.clone().or_else(|| {
        (!env_keys)
            .then(|| std::env::var("AWS_PROFILE").ok())
            .flatten()
    });
    let profile = match (&opts.credentials, &profile_name) {
        (Credentials::Chain, Some(name)) => match profile::load(name) {
            Some(p) => Some(p),
            None if opts.profile.is_some() || std::env::var_os("AWS_PROFILE").is_some() => {
                return Err(StorageError::other(format!(
                    "profile {name}: not in the shared credentials or config file"
                )));
            }
            None => None,
        },
        (Credentials::Chain, None) if !env_keys => profile::load("default"),
        _ => None,
    };
    if let (Some(p), Some(name)) = (&profile, &profile_name)
        && let Some(key) = &p.unsupported
        && p.access_key_id.is_none()
    {
        return Err(StorageError::other(format!(
            "profile {name}: its {key} is not supported; give it static keys or use the environment"
        )));
    }
    let region = opts
        .region
        .clone()
        .or_else(|| profile.as_ref().and_then(|p| p.region.clone()))
        .or_else(|| std::env::var("AWS_REGION").ok())
        .or_else(|| std::env::var("AWS_DEFAULT_REGION").ok())
        .unwrap_or_else(|| "us-east-1".to_string());
    // Over plain http, with keys at hand, nothing is ever sent over TLS
    // (the credentials chain's https step, STS for a web identity, is
    // taken only without keys): the system's certificates, which each
    // client would read and parse, file by file, at every start, are
    // left unread.
    let keys_at_hand = match &opts.credentials {
        Credentials::Static { .. } | Credentials::Anonymous => true,
        Credentials::Chain => {
            (env_keys && std::env::var_os("AWS_SECRET_ACCESS_KEY").is_some())
                || profile
                    .as_ref()
                    .is_some_and(|p| p.access_key_id.is_some() && p.secret_access_key.is_some())
        }
    };
    let endpoint_display = endpoint
        .clone()
        .unwrap_or_else(|| format!("https://s3.{region}.amazonaws.com"));

    let rest = credentials::Rest::from_env();
    let build = |retries: bool| -> Result<Arc<dyn Store>, StorageError> {
        let mut b = AmazonS3Builder::from_env()
            .with_http_connector(setup.connector())
            .with_bucket_name(url.bucket())
            .with_region(&region)
            .with_client_options(setup.client_options(keys_at_hand))
            .with_retry(setup.retry(retries));
        if let Some(ep) = endpoint {
            let path_style = opts.force_path_style || host_is_address(ep);
            b = b
                .with_allow_http(ep.starts_with("http://"))
                .with_virtual_hosted_style_request(!path_style)
                .with_endpoint(if path_style {
                    ep.clone()
                } else {
                    virtual_hosted(ep, url.bucket())
                });
        } else {
            b = b.with_virtual_hosted_style_request(!opts.force_path_style);
        }
        b = match &opts.credentials {
            Credentials::Static {
                key_id,
                secret,
                token,
            } => b.with_credentials(static_provider(
                key_id.clone(),
                secret.clone(),
                token.clone(),
            )),
            Credentials::Anonymous => b.with_skip_signature(true),
            Credentials::Chain => match &profile {
                Some(p) if opts.profile.is_some() || !env_keys => {
                    match (&p.access_key_id, &p.secret_access_key) {
                        (Some(k), Some(s)) => b.with_credentials(static_provider(
                            k.clone(),
                            s.clone(),
                            p.session_token.clone(),
                        )),
                        _ => b,
                    }
                }
                _ => b,
            },
        };
        let failed = |e: object_store::Error| setup.cannot_set_up(e);
        // Without keys at hand, what object_store tries last (web
        // identity, container, instance metadata) failing is told as
        // no credentials found, naming where they were looked for.
        if matches!(opts.credentials, Credentials::Chain) && !keys_at_hand {
            let inner = b.clone().build().map_err(failed)?;
            let profile = profile_name.as_deref().unwrap_or("default");
            b = b.with_credentials(credentials::Told::new(
                rest.any(),
                inner.credentials().clone(),
                rest.looked(profile),
            ));
        }
        Ok(Arc::new(b.build().map_err(failed)?))
    };
    Ok(Clients {
        store: build(true)?,
        probe: build(false)?,
        endpoint: endpoint_display,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_endpoint_is_path_style_and_a_name_can_be_virtual_hosted() {
        assert!(host_is_address("http://127.0.0.1:9000"));
        assert!(host_is_address("http://localhost:9000"));
        assert!(host_is_address("http://[::1]:9000"));
        assert!(!host_is_address("https://s3.example.test"));
        assert_eq!(
            virtual_hosted("https://s3.example.test:8443", "library"),
            "https://library.s3.example.test:8443"
        );
    }
}
