//! What the daemon saw of watched books, held until the watch reports a
//! change there (contract §2.5: the rule the kernel's caches follow in a
//! watched book). A look taken before a report must not be kept after it:
//! it may be older than the change reported.

/// `T`, what looks at watched books saw, with the number of reports the
/// watch made so far.
pub(crate) struct Held<T> {
    reports: u64,
    held: T,
}

impl<T> Held<T> {
    pub(crate) fn new(held: T) -> Held<T> {
        Held { reports: 0, held }
    }

    /// The number of reports so far: taken before a look, and handed to
    /// `since` to keep what the look saw.
    pub(crate) fn reports(&self) -> u64 {
        self.reports
    }

    /// What is held, to read.
    pub(crate) fn held(&mut self) -> &mut T {
        &mut self.held
    }

    /// The watch reported changes: what is held, to drop what they touch.
    pub(crate) fn reported(&mut self) -> &mut T {
        self.reports += 1;
        &mut self.held
    }

    /// What is held, to keep what a look taken when there were `reports`
    /// reports saw; `None` when a report came since.
    pub(crate) fn since(&mut self, reports: u64) -> Option<&mut T> {
        (self.reports == reports).then_some(&mut self.held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_look_older_than_a_report_is_not_kept() {
        let mut held = Held::new(Vec::new());
        let before = held.reports();
        held.reported().clear();
        assert!(held.since(before).is_none());
        let now = held.reports();
        held.since(now).unwrap().push(1);
        assert_eq!(held.held(), &[1]);
    }
}
