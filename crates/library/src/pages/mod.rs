//! A decoded chapter as pages: paging it (`page`), a page's two
//! renderings (`render`) and a page with the names it is rendered with
//! and its size (`output`).

pub(crate) mod output;
pub mod page;
pub mod render;
