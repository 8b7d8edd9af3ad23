//! What a command's ROOT and bucket options say before anything is
//! opened: a ROOT that reads as a mistyped `s3://`, or a bucket option
//! given with a directory, is a usage error (exit 2), one line naming it,
//! rather than a library not found or an option silently ignored.

use std::path::Path;

use super::args::BucketArgs;
use crate::mount::library_at::{BucketOptions, LibraryAt};

/// The bucket options given, each as it was written (flag or `-o`).
fn given(flags: &BucketArgs, options: &BucketOptions) -> Vec<&'static str> {
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
            options.no_sign_request,
            "--no-sign-request",
            "-o no_sign_request",
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Where `root` names, once its form and the bucket options given with
/// it agree; else the one line saying what does not apply.
pub(crate) fn check_root(
    root: &Path,
    flags: &BucketArgs,
    options: &BucketOptions,
) -> Result<LibraryAt, String> {
    let at = LibraryAt::parse(root)?;
    if let LibraryAt::Dir(dir) = &at
        && let Some(option) = given(flags, options).first()
    {
        return Err(format!(
            "{option} applies to a bucket (ROOT s3://BUCKET[/PREFIX]), not to the directory {}",
            dir.display()
        ));
    }
    Ok(at)
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
        let err = check_root(Path::new("/srv/lib"), &flags, &BucketOptions::default()).unwrap_err();
        assert!(err.starts_with("--region "), "{err}");
        let options = BucketOptions {
            no_sign_request: true,
            ..BucketOptions::default()
        };
        let err = check_root(Path::new("/srv/lib"), &BucketArgs::default(), &options).unwrap_err();
        assert!(err.starts_with("-o no_sign_request "), "{err}");
        assert!(check_root(Path::new("s3://shelf"), &flags, &options).is_ok());
        assert!(
            check_root(
                Path::new("/srv/lib"),
                &BucketArgs::default(),
                &BucketOptions::default()
            )
            .is_ok()
        );
    }
}
