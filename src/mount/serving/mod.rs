//! Serving one mount: the session over the kernel's connection, the
//! adapter from fuser's requests to the tree, how each request runs
//! (`runner`: on which thread, `deadline`: bounded by the source timeout)
//! and the threads that talk to the kernel unasked (`pusher`).

pub(super) mod deadline;
pub(super) mod ending;
#[macro_use]
pub(super) mod read_only;
pub(super) mod fuse;
pub(super) mod offload;
pub(super) mod pusher;
pub(super) mod replies;
pub(crate) mod runner;
pub(super) mod session;
