//! How a command reaches a library in a bucket: the options every
//! command that takes a ROOT shares.

use clap::Args;
use novelfs_storage::{Credentials, StoreOptions};

/// How to reach a library in a bucket (ROOT `s3://BUCKET[/PREFIX]`,
/// `gs://BUCKET[/PREFIX]` or `az://CONTAINER[/PREFIX]`), as mountpoint-s3
/// names these options. Credentials come from the cloud's own chain
/// (docs/clouds.md): for S3, AWS_ACCESS_KEY_ID and friends, the shared
/// credentials and config files (with --profile), container and instance
/// metadata.
#[derive(Args, Debug, Clone, Default)]
pub struct BucketArgs {
    /// The store's endpoint (http(s)://HOST[:PORT]): MinIO, Ceph, R2 and
    /// other servers speaking S3, an emulator, a sovereign cloud; the
    /// cloud's own by default.
    #[arg(long, value_name = "URL", value_parser = super::value::endpoint)]
    pub endpoint_url: Option<String>,
    /// Azure: the storage account (else AZURE_STORAGE_ACCOUNT_NAME).
    #[arg(long, value_name = "NAME", value_parser = |v: &str| super::value::non_empty(v, super::value::NAME))]
    pub account: Option<String>,
    /// The bucket's region (else the profile's, AWS_REGION, or us-east-1).
    #[arg(long, value_name = "REGION", value_parser = super::value::region)]
    pub region: Option<String>,
    /// A named profile of the shared AWS credentials and config files.
    #[arg(long, value_name = "NAME", value_parser = |v: &str| super::value::non_empty(v, super::value::NAME))]
    pub profile: Option<String>,
    /// Address the bucket as ENDPOINT/BUCKET rather than BUCKET.ENDPOINT.
    #[arg(long)]
    pub force_path_style: bool,
    /// Send requests unsigned, for a public bucket (or container): no
    /// credentials are looked for (the AWS CLI's name; -o no_sign_request).
    #[arg(long)]
    pub no_sign_request: bool,
}

impl BucketArgs {
    /// The bucket's settings: these flags over `given` (the same options
    /// from `-o`, and what the command bounds one access by), a flag
    /// winning. The one place a flag becomes a setting of the client.
    pub(crate) fn over(&self, given: StoreOptions) -> StoreOptions {
        StoreOptions {
            endpoint_url: self.endpoint_url.clone().or(given.endpoint_url),
            account: self.account.clone().or(given.account),
            region: self.region.clone().or(given.region),
            profile: self.profile.clone().or(given.profile),
            force_path_style: self.force_path_style || given.force_path_style,
            credentials: match self.no_sign_request {
                true => Credentials::Anonymous,
                false => given.credentials,
            },
            ..given
        }
    }
}
