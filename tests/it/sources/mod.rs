//! A local library's source misbehaving under a mount: vanishing, unreadable,
//! slow, over a network filesystem that stops answering.

mod faults;
mod library_errors;
mod network_fs;
mod slow_source;
mod source_down;
