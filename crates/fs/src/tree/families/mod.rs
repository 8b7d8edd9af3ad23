//! The node families, one module each: what a node of the family is
//! (its attributes, its listing, its bytes) and the names it answers. The
//! tree (`super`) dispatches each request to the node's family.

pub(super) mod ambiguous;
pub(super) mod book;
pub(super) mod chapter;
pub(super) mod index_files;
pub(super) mod page;
pub(super) mod root;
