//! A failure's cause, kept beside the kind a layer decided for it: the
//! error a layer below (object_store, the OS, the library) gave, shared so
//! that an error carrying it stays `Clone` (each waiter on one access gets
//! the same failure), and shown with its whole chain where it is logged.

use std::error::Error;
use std::fmt;
use std::sync::Arc;

/// The error that caused a failure, as its layer gave it.
///
/// Two causes are equal when they are the same error (one failure handed
/// to several waiters), never because their words agree: what a failure
/// is, is decided by its kind, not by its text.
#[derive(Clone)]
pub struct Cause(Arc<dyn Error + Send + Sync>);

impl Cause {
    pub fn new(e: impl Error + Send + Sync + 'static) -> Cause {
        Cause(Arc::new(e))
    }

    /// The error itself, for `Error::source` and for a downcast.
    pub fn get(&self) -> &(dyn Error + Send + Sync + 'static) {
        &*self.0
    }
}

impl<E: Error + Send + Sync + 'static> From<E> for Cause {
    fn from(e: E) -> Cause {
        Cause::new(e)
    }
}

impl PartialEq for Cause {
    fn eq(&self, other: &Cause) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Cause {}

impl fmt::Debug for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Any error, as the binary's edge keeps one until it is logged or said:
/// a `?` turns an error (or a `String` of words) into one.
pub type Failure = Box<dyn Error + Send + Sync>;

/// What failed, in words, and the error that caused it when there is one:
/// an error of no kind of its own that keeps its cause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failed {
    pub what: String,
    pub cause: Option<Cause>,
}

impl Failed {
    /// `what` failed, caused by `cause`.
    pub fn by(what: impl Into<String>, cause: impl Into<Cause>) -> Failed {
        Failed {
            what: what.into(),
            cause: Some(cause.into()),
        }
    }

    /// `what` failed, and says all there is to say.
    pub fn said(what: impl Into<String>) -> Failed {
        Failed {
            what: what.into(),
            cause: None,
        }
    }
}

/// Its words, then its cause's, as an `io::Error`'s show theirs (`Chain`
/// writes them once).
impl fmt::Display for Failed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.cause {
            Some(cause) => write!(f, "{}: {cause}", self.what),
            None => f.write_str(&self.what),
        }
    }
}

impl Error for Failed {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.cause
            .as_ref()
            .map(|c| c.get() as &(dyn Error + 'static))
    }
}

/// `e` and each error it says it was caused by (`Error::source`), one
/// after the other, on one line: what a log line shows of a failure, once.
/// A cause whose words end the error before it (an error that shows its
/// source in its own words, as object_store's and `io::Error`'s do) is not
/// written again; a line break in the words (a server's error body) is
/// written as a space, so that the log keeps one line per event.
pub struct Chain<'a>(pub &'a (dyn Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut shown = self.0.to_string();
        one_line(f, &shown)?;
        let mut next = self.0.source();
        while let Some(e) = next {
            let words = e.to_string();
            if !shown.ends_with(&words) {
                f.write_str(": ")?;
                one_line(f, &words)?;
            }
            shown = words;
            next = e.source();
        }
        Ok(())
    }
}

fn one_line(f: &mut fmt::Formatter<'_>, words: &str) -> fmt::Result {
    for (i, line) in words.lines().enumerate() {
        if i > 0 {
            f.write_str(" ")?;
        }
        f.write_str(line.trim_end_matches('\r'))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Outer(std::io::Error);

    impl fmt::Display for Outer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("GET s3://b/k")
        }
    }

    impl Error for Outer {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(&self.0)
        }
    }

    /// An error that shows its source in its own words too.
    #[derive(Debug)]
    struct Shows(std::io::Error);

    impl fmt::Display for Shows {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "GET s3://b/k: {}", self.0)
        }
    }

    impl Error for Shows {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_chain_shows_each_cause_once() {
        let e = Outer(std::io::Error::other("connection reset"));
        assert_eq!(Chain(&e).to_string(), "GET s3://b/k: connection reset");
        let bare = std::io::Error::other("alone");
        assert_eq!(Chain(&bare).to_string(), "alone");
        let repeated = Shows(std::io::Error::other("reset"));
        assert_eq!(Chain(&repeated).to_string(), "GET s3://b/k: reset");
        let body = Outer(std::io::Error::other("<?xml?>\r\n<Error>\n</Error>"));
        assert_eq!(
            Chain(&body).to_string(),
            "GET s3://b/k: <?xml?> <Error> </Error>"
        );
    }

    /// A failure said in words keeps the error under it: the chain shows
    /// both, and the error is found again by its type.
    #[test]
    fn a_failure_keeps_what_caused_it() {
        let failed = Failed::by("s3://b", std::io::Error::other("reset"));
        assert_eq!(Chain(&failed).to_string(), "s3://b: reset");
        let failure = Failure::from(failed);
        let io = failure
            .source()
            .and_then(|e| e.downcast_ref::<std::io::Error>());
        assert_eq!(
            io.map(std::io::Error::kind),
            Some(std::io::ErrorKind::Other)
        );
        let words = Failure::from("only words".to_string());
        assert_eq!(Chain(&*words).to_string(), "only words");
        assert_eq!(Chain(&Failed::said("said")).to_string(), "said");
    }

    #[test]
    fn a_cause_is_equal_only_to_itself() {
        let a = Cause::new(std::io::Error::other("same words"));
        let b = Cause::new(std::io::Error::other("same words"));
        assert_eq!(a, a.clone());
        assert_ne!(a, b);
    }
}
