//! Every thread novelfs starts has a name (`ps -T`, `top -H`, a panic's
//! message and the log say which part it is) and, where it does little,
//! a small stack: both are given here, in one call.

use std::io;
use std::thread::{Builder, JoinHandle};

/// Starts `f` on a thread named `name`, with a stack of `stack` bytes
/// (the platform's default when `None`).
pub fn spawn<F, T>(name: &str, stack: Option<usize>, f: F) -> io::Result<JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let builder = Builder::new().name(name.to_string());
    match stack {
        Some(bytes) => builder.stack_size(bytes),
        None => builder,
    }
    .spawn(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_has_its_name() {
        let name = spawn("novelfs-test", Some(64 << 10), || {
            std::thread::current().name().map(str::to_string)
        })
        .unwrap()
        .join()
        .unwrap();
        assert_eq!(name.as_deref(), Some("novelfs-test"));
    }
}
