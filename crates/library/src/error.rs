//! The tool's error texts (SPEC §1.7), verbatim.

use std::fmt;

use novelfs_kit::cause::Cause;

use super::backing::{SourceFault, SourceKind, passing};
use super::number::ChapterNumber;
use super::text::js::format_number;

#[derive(Debug, Clone, PartialEq)]
pub enum NovelError {
    SwitchedOff,
    /// Another tool of the assistant switched off (`novel_books`,
    /// `novel_chapters`): the switch applies per tool name.
    ToolSwitchedOff {
        tool: &'static str,
    },
    EmptyBook,
    EmptyChapter,
    BookEmptyAfterSanitize,
    BadOffset,
    BadLimit,
    BookNotFound {
        root: String,
        book: String,
    },
    ChapterNotFound {
        book: String,
        needle: String,
    },
    Ambiguous {
        number: ChapterNumber,
        files: Vec<String>,
    },
    Encoding {
        path: String,
        utf16_suspected: bool,
    },
    OffsetOutOfRange {
        offset: u64,
        file: String,
        total_lines: u64,
    },
    /// A library root without `novels/`: every command that takes a root
    /// refuses it with this text (`root` as the user gave it, absolute).
    NotALibrary {
        root: String,
    },
    /// The storage did not answer in time or could not be reached (a
    /// bucket's server stalling, a dropped connection): the same words as
    /// `Io`, but what failed now may be read at the next try, so it is
    /// never kept as what the file holds. `kind` is what failed, for the
    /// errno a reader gets; the text says nothing of it.
    Unavailable {
        path: String,
        reason: String,
        kind: SourceKind,
        cause: Option<Cause>,
    },
    /// Reading the source failed (permissions, vanished file, too large…):
    /// `reason` in the words of `cause`, the error that said so, when
    /// there is one.
    Io {
        path: String,
        reason: String,
        kind: SourceKind,
        cause: Option<Cause>,
    },
}

impl fmt::Display for NovelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NovelError::SwitchedOff => f.write_str("工具 novel_read（阅读章节）当前已在「写作助手功能」UI 中关闭。可用 novel_sentence_config 或侧边栏面板重新开启。"),
            NovelError::ToolSwitchedOff { tool } => write!(
                f,
                "工具 {tool}（{}）当前已在「写作助手功能」UI 中关闭。可用 novel_sentence_config 或侧边栏面板重新开启。",
                tool_label(tool)
            ),
            NovelError::EmptyBook => f.write_str("参数 \"book\" 不能为空字符串"),
            NovelError::EmptyChapter => f.write_str("参数 \"chapter\" 不能为空字符串"),
            NovelError::BookEmptyAfterSanitize => f.write_str("参数 book 不能为空（清洗后无有效字符）"),
            NovelError::BadOffset => f.write_str("参数 \"offset\" 必须是 1 到 9007199254740991 之间的整数"),
            NovelError::BadLimit => f.write_str("参数 \"limit\" 必须是 1 到 400 之间的整数"),
            NovelError::BookNotFound { root, book } => write!(
                f,
                "书库中未找到作品目录：{root}/novels/{book}（检查书名是否精确匹配——可用 novel_books 查看全部作品名；或确认 novels/ 下已创建该书目录）"
            ),
            NovelError::ChapterNotFound { book, needle } => write!(
                f,
                "在作品 \"{book}\" 中找不到章节 \"{needle}\"（可用 novel_chapters 查看章节列表）"
            ),
            NovelError::Ambiguous { number, files } => write!(
                f,
                "第 {} 章有 {} 个文件，无法确定要哪一份：{}。请把 chapter 参数写成其中一个文件名（可省略扩展名）来指定；或用 novel_continuity_check 查看同章号清单后改名。",
                format_number(*number),
                files.len(),
                files.join("、")
            ),
            NovelError::Encoding { path, utf16_suspected } => {
                let hint = if *utf16_suspected {
                    "；该文件的高位字节分布像 UTF-16，可能是缺 BOM 的 UTF-16LE/BE——请另存为 UTF-8（UTF-16 请带 BOM）"
                } else {
                    "，也不像带 BOM 或缺 BOM 的 UTF-16"
                };
                write!(f, "cannot detect text encoding of \"{path}\": 不是有效的 UTF-8/GBK{hint}，请将文件另存为 UTF-8 编码")
            }
            NovelError::OffsetOutOfRange { offset, file, total_lines } => {
                write!(f, "offset {offset} 超出范围（\"{file}\" 共 {total_lines} 行）")
            }
            NovelError::NotALibrary { root } => write!(
                f,
                "{root} is not a novelfs library: it has no novels/ directory (expected {root}/novels/<book>/<chapter>.md)"
            ),
            NovelError::Io { path, reason, .. } | NovelError::Unavailable { path, reason, .. } => {
                write!(f, "无法读取 \"{path}\"：{reason}")
            }
        }
    }
}

impl std::error::Error for NovelError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            NovelError::Io {
                cause: Some(cause), ..
            }
            | NovelError::Unavailable {
                cause: Some(cause), ..
            } => Some(cause.get()),
            _ => None,
        }
    }
}

/// The label the assistant's UI gives a tool, as its switched-off text
/// names it.
fn tool_label(tool: &str) -> &str {
    match tool {
        "novel_books" => "作品列表",
        "novel_chapters" => "章节清单",
        "novel_read" => "阅读章节",
        other => other,
    }
}

impl NovelError {
    /// Reading `path` (as pages print it) failed with `e`: `Unavailable`
    /// when the storage failed now, else `Io`; either keeps `e`'s kind.
    pub fn from_io(path: String, e: &std::io::Error) -> NovelError {
        let (reason, kind) = (e.to_string(), SourceKind::of(e));
        let cause = Some(Cause::new(SourceFault::copy(e)));
        if passing(e) {
            NovelError::Unavailable {
                path,
                reason,
                kind,
                cause,
            }
        } else {
            NovelError::Io {
                path,
                reason,
                kind,
                cause,
            }
        }
    }

    /// The line an `ERROR` file holds and the CLI prints.
    pub fn error_line(&self) -> String {
        format!("错误：{self}\n")
    }

    /// What a `.json` index file holds when its call fails, so that a
    /// `.json` file always parses: `{"error": "错误：…"}`, written as the
    /// pages' JSON is (two-space indent, a final newline).
    pub fn error_json(&self) -> String {
        let value = serde_json::json!({ "error": format!("错误：{self}") });
        serde_json::to_string_pretty(&value).expect("a string serializes") + "\n"
    }
}
