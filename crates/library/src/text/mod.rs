//! A chapter's bytes as text and its lines as a page counts them:
//! encoding detection (`decode`), JavaScript's string semantics the tool
//! inherits (`js`) and a line's cut and sizes (`line`).

pub mod decode;
pub mod js;
pub mod line;
