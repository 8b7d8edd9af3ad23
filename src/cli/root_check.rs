//! What a command's ROOT and bucket options say before anything is
//! opened: a ROOT that reads as a mistyped `s3://` (`gs://`, `az://`), a
//! bucket option given with a directory, or an option of one cloud given
//! with another's bucket, is a usage error (exit 2), one line naming it,
//! rather than a library not found or an option silently ignored.

use std::path::{Path, PathBuf};

use novelfs_storage::{Cloud, Credentials, StoreOptions};

use super::flags::bucket::BucketArgs;
use crate::mount::library_at::LibraryAt;

/// The clouds an option (as `given` names it) applies to.
fn applies_to(option: &str) -> &'static [Cloud] {
    let name = option.trim_start_matches("--").trim_start_matches("-o ");
    match name {
        "region" | "profile" | "force-path-style" | "force_path_style" => &[Cloud::S3],
        "account" => &[Cloud::Azure],
        _ => &Cloud::ALL,
    }
}

/// The bucket options given, each as it was written (flag or `-o`).
fn given(flags: &BucketArgs, options: &StoreOptions) -> Vec<&'static str> {
    let either = |flag: bool, option: bool, f: &'static str, o: &'static str| match (flag, option) {
        (true, _) => Some(f),
        (false, true) => Some(o),
        _ => None,
    };
    [
        either(
            flags.endpoint_url.is_some(),
            options.endpoint_url.is_some(),
            "--endpoint-url",
            "-o endpoint_url",
        ),
        either(
            flags.account.is_some(),
            options.account.is_some(),
            "--account",
            "-o account",
        ),
        either(
            flags.region.is_some(),
            options.region.is_some(),
            "--region",
            "-o region",
        ),
        either(
            flags.profile.is_some(),
            options.profile.is_some(),
            "--profile",
            "-o profile",
        ),
        either(
            flags.force_path_style,
            options.force_path_style,
            "--force-path-style",
            "-o force_path_style",
        ),
        either(
            flags.no_sign_request,
            matches!(options.credentials, Credentials::Anonymous),
            "--no-sign-request",
            "-o no_sign_request",
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// A command's library as its arguments name it, decided once: where
/// ROOT is, and the settings that reach its bucket (the flags over `-o`).
#[derive(Debug, Clone)]
pub(crate) struct LibraryRoot {
    /// ROOT as it was written, for messages.
    pub(crate) given: PathBuf,
    pub(crate) at: LibraryAt,
    pub(crate) store: StoreOptions,
}

/// Where `root` names, once its form and the bucket options given with
/// it agree (`flags` and, from `-o`, `options`), with the bucket's
/// settings; else the one line saying what does not apply.
pub(crate) fn check_root(
    root: &Path,
    flags: &BucketArgs,
    options: &StoreOptions,
) -> Result<LibraryRoot, String> {
    let at = LibraryAt::parse(root)?;
    let given = given(flags, options);
    match &at {
        LibraryAt::Dir(dir) => {
            if let Some(option) = given.first() {
                return Err(format!(
                    "{option} applies to a bucket (ROOT s3://, gs:// or az://), not to the directory {}",
                    dir.display()
                ));
            }
        }
        LibraryAt::Bucket(url) => {
            if let Some(option) = given.iter().find(|o| !applies_to(o).contains(&url.cloud())) {
                let to: Vec<String> = applies_to(option)
                    .iter()
                    .map(|c| format!("{}://", c.scheme()))
                    .collect();
                return Err(format!(
                    "{option} applies to a {} bucket ({}), not to {url}",
                    applies_to(option)[0].store_name(),
                    to.join(", ")
                ));
            }
            // An Azure container is named within its account: without
            // one there is nothing to ask.
            let env_account = ["AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT"]
                .iter()
                .any(|v| std::env::var_os(v).is_some_and(|a| !a.is_empty()));
            if url.cloud() == Cloud::Azure
                && flags.account.is_none()
                && options.account.is_none()
                && !env_account
            {
                return Err(format!(
                    "{url}: no storage account: give --account NAME (-o account=NAME) or set AZURE_STORAGE_ACCOUNT_NAME"
                ));
            }
        }
    }
    Ok(LibraryRoot {
        given: root.to_path_buf(),
        at,
        store: flags.over(options.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_option_with_a_directory_is_named_in_the_form_given() {
        let flags = BucketArgs {
            region: Some("eu-west-1".into()),
            ..BucketArgs::default()
        };
        let err = check_root(Path::new("/srv/lib"), &flags, &StoreOptions::default()).unwrap_err();
        assert!(err.starts_with("--region "), "{err}");
        let options = StoreOptions {
            credentials: Credentials::Anonymous,
            ..StoreOptions::default()
        };
        let err = check_root(Path::new("/srv/lib"), &BucketArgs::default(), &options).unwrap_err();
        assert!(err.starts_with("-o no_sign_request "), "{err}");
        assert!(check_root(Path::new("s3://shelf"), &flags, &options).is_ok());
        let err = check_root(Path::new("gs://shelf"), &flags, &options).unwrap_err();
        assert!(err.starts_with("--region applies to a S3 bucket"), "{err}");
        assert!(check_root(Path::new("gs://shelf"), &BucketArgs::default(), &options).is_ok());
        let account = BucketArgs {
            account: Some("shelf".into()),
            ..BucketArgs::default()
        };
        assert!(check_root(Path::new("az://shelf"), &account, &options).is_ok());
        let err = check_root(Path::new("s3://shelf"), &account, &options).unwrap_err();
        assert!(err.starts_with("--account "), "{err}");
        assert!(
            check_root(
                Path::new("/srv/lib"),
                &BucketArgs::default(),
                &StoreOptions::default()
            )
            .is_ok()
        );
    }
}
