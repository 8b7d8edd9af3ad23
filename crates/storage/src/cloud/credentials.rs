//! Where a cloud's credentials chain looks, said when it finds none.
//! object_store falls back to the instance metadata service (AWS's, the
//! Google metadata server, Azure's managed identity) when nothing else is
//! set; that failing (no such service here, or a network that answers it
//! 403) would read as the bucket refusing the request. The chain's last
//! steps are wrapped so that their failure is
//! `StorageError::NoCredentials`, naming every place looked in, and
//! `AWS_EC2_METADATA_DISABLED=true` (which object_store ignores) is
//! honoured: no request is made for credentials that cannot be found.

use std::sync::Arc;

use object_store::CredentialProvider;

/// The chain found no credentials: `looked` names where it looked,
/// `cause` what the last step answered.
#[derive(Debug)]
pub struct Missing {
    pub looked: String,
    pub cause: Option<String>,
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no credentials found (looked in {})", self.told())
    }
}

impl std::error::Error for Missing {}

impl Missing {
    /// Where the chain looked, with what its last step answered when it
    /// was asked (an HTTP status, or that it could not be reached).
    pub fn told(&self) -> String {
        let Some(cause) = &self.cause else {
            return self.looked.clone();
        };
        let answer = match cause.find("status code: ") {
            Some(at) => {
                let code = &cause[at + "status code: ".len()..];
                format!("HTTP {}", code.get(..3).unwrap_or(code))
            }
            None => "no answer".to_string(),
        };
        format!("{} ({answer})", self.looked)
    }
}

/// The `Missing` in an error's chain of sources.
pub fn missing_in(e: &object_store::Error) -> Option<&Missing> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if let Some(m) = s.downcast_ref::<Missing>() {
            return Some(m);
        }
        source = s.source();
    }
    None
}

/// Whether the environment sets `var` to something.
pub(super) fn env_set(var: &str) -> bool {
    std::env::var_os(var).is_some_and(|v| !v.is_empty())
}

/// The chain's steps after the environment's keys and the shared files:
/// what object_store tries, and whether the instance metadata is off.
pub struct Rest {
    web_identity: bool,
    container: bool,
    metadata_disabled: bool,
}

impl Rest {
    pub fn from_env() -> Rest {
        Rest {
            web_identity: env_set("AWS_WEB_IDENTITY_TOKEN_FILE") && env_set("AWS_ROLE_ARN"),
            container: env_set("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
                || env_set("AWS_CONTAINER_CREDENTIALS_FULL_URI"),
            metadata_disabled: std::env::var("AWS_EC2_METADATA_DISABLED")
                .is_ok_and(|v| v.eq_ignore_ascii_case("true")),
        }
    }

    /// Whether a step remains that can be asked.
    pub fn any(&self) -> bool {
        self.web_identity || self.container || !self.metadata_disabled
    }

    /// Every place looked in, in the chain's order, `profile` the one
    /// read from the shared files.
    pub fn looked(&self, profile: &str) -> String {
        let file = |var: &str, rel: &str| {
            std::env::var(var).unwrap_or_else(|_| match std::env::var("HOME") {
                Ok(home) => format!("{}/{rel}", home.trim_end_matches('/')),
                Err(_) => format!("~/{rel} (no HOME)"),
            })
        };
        let mut places = vec![
            "the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)".to_string(),
            format!(
                "profile {profile} (AWS_PROFILE, --profile) of {} and {}",
                file("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials"),
                file("AWS_CONFIG_FILE", ".aws/config")
            ),
        ];
        if self.web_identity {
            places.push("the web identity (AWS_WEB_IDENTITY_TOKEN_FILE)".into());
        } else if self.container {
            places.push("the container credentials (AWS_CONTAINER_CREDENTIALS_*)".into());
        } else if self.metadata_disabled {
            places.push("no instance metadata (AWS_EC2_METADATA_DISABLED=true)".into());
        } else {
            places.push("the instance metadata service".into());
        }
        places.join(", ")
    }
}

/// The chain's last step, `inner` (object_store's provider for it, `None`
/// when none remains), with its failure told as `Missing`.
pub struct Told<C> {
    inner: Option<Arc<dyn CredentialProvider<Credential = C>>>,
    looked: String,
}

impl<C> std::fmt::Debug for Told<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Told")
            .field("looked", &self.looked)
            .finish_non_exhaustive()
    }
}

impl<C> Told<C> {
    /// `inner` asked when `any` step remains; `looked` every place the
    /// chain looks in, in its order.
    pub fn new(
        any: bool,
        inner: Arc<dyn CredentialProvider<Credential = C>>,
        looked: String,
    ) -> Arc<Told<C>> {
        Arc::new(Told {
            inner: any.then_some(inner),
            looked,
        })
    }
}

#[async_trait::async_trait]
impl<C: Send + Sync + std::fmt::Debug + 'static> CredentialProvider for Told<C> {
    type Credential = C;

    async fn get_credential(&self) -> object_store::Result<Arc<C>> {
        let missing = |cause: Option<String>| object_store::Error::Generic {
            store: "bucket",
            source: Box::new(Missing {
                looked: self.looked.clone(),
                cause,
            }),
        };
        match &self.inner {
            None => Err(missing(None)),
            Some(inner) => inner
                .get_credential()
                .await
                .map_err(|e| missing(Some(e.to_string().chars().take(200).collect()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StorageError;
    use crate::cloud::classify::{Context, classify};
    use novelfs_library::backing::SourceKind;

    fn cx() -> Context<'static> {
        Context {
            cloud: crate::Cloud::S3,
            bucket: "shelf",
            endpoint: "http://127.0.0.1:9000",
            timeout: std::time::Duration::from_secs(5),
        }
    }

    /// A metadata service's 403 inside the chain's failure is no
    /// credentials found, not the bucket refusing them.
    #[test]
    fn the_chain_failing_is_no_credentials_with_where_it_looked() {
        let missing = Missing {
            looked: "the environment, the instance metadata service".into(),
            cause: Some(
                "Error performing PUT http://169.254.169.254/latest/api/token - Server returned \
                 non-2xx status code: 403 Forbidden: "
                    .into(),
            ),
        };
        assert_eq!(
            missing.told(),
            "the environment, the instance metadata service (HTTP 403)"
        );
        let e = object_store::Error::Generic {
            store: "S3",
            source: Box::new(missing),
        };
        let answer = crate::cloud::wire::Failure {
            status: 403,
            body: String::new(),
        };
        let told = classify(e, Some(answer), "LIST s3://shelf/novels/", "novels/", &cx());
        let StorageError::NoCredentials { looked } = &told else {
            panic!("{told:?}");
        };
        assert!(looked.ends_with("(HTTP 403)"), "{looked}");
        assert_eq!(told.source_kind(), SourceKind::Denied);
        let line = told.to_string();
        assert!(
            !line.contains('\n') && line.contains("--no-sign-request"),
            "{line}"
        );
    }

    #[test]
    fn where_it_looked_names_the_variables_the_files_and_the_last_step() {
        let off = Rest {
            web_identity: false,
            container: false,
            metadata_disabled: true,
        };
        assert!(!off.any());
        let looked = off.looked("reader");
        for part in [
            "AWS_ACCESS_KEY_ID",
            "profile reader",
            ".aws/credentials",
            ".aws/config",
            "AWS_EC2_METADATA_DISABLED",
        ] {
            assert!(looked.contains(part), "{part}: {looked}");
        }
        let container = Rest {
            web_identity: false,
            container: true,
            metadata_disabled: true,
        };
        assert!(container.any());
        assert!(container.looked("default").contains("container"));
    }
}
