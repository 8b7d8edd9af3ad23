//! A page's checks: its header and lines as text and as JSON, against
//! what the specification says a page holds.

use super::*;

/// The UTF-16 length of a string, as JavaScript counts it.
pub fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// What a page file says about itself, once it has been checked to be one
/// whole, self-consistent page.
#[derive(Debug, Clone)]
pub struct PageInfo {
    pub path: String,
    pub offset: u64,
    pub total_lines: u64,
    pub chars: usize,
    pub truncated: bool,
    /// (number, text) of every shown line.
    pub lines: Vec<(u64, String)>,
}

impl PageInfo {
    fn check_lines(&self, offset: u64) -> Result<(), String> {
        if self.offset != offset {
            return Err(format!(
                "page offset {} where {offset} was asked",
                self.offset
            ));
        }
        if self.lines.is_empty() {
            return Err("a page without lines".into());
        }
        for (k, (n, _)) in self.lines.iter().enumerate() {
            if *n != offset + k as u64 {
                return Err(format!(
                    "line {k} of the page is numbered {n}, want {}",
                    offset + k as u64
                ));
            }
        }
        let joined: Vec<&str> = self.lines.iter().map(|(_, t)| t.as_str()).collect();
        let units = utf16_len(&joined.join("\n"));
        if units != self.chars {
            return Err(format!(
                "chars {} but the lines hold {units} UTF-16 units",
                self.chars
            ));
        }
        let last = self.lines.last().unwrap().0;
        if self.total_lines == 0 {
            if !(self.lines.len() == 1
                && self.lines[0].1.is_empty()
                && offset == 1
                && !self.truncated)
            {
                return Err("an empty chapter must show one empty line 1".into());
            }
        } else if last > self.total_lines {
            return Err(format!("line {last} beyond total {}", self.total_lines));
        } else if !self.truncated && last != self.total_lines {
            return Err(format!(
                "not truncated but ends at line {last} of {}",
                self.total_lines
            ));
        }
        Ok(())
    }
}

/// Checks that `bytes` is one whole text page (`format_read` + "\n") that
/// starts at `offset`: header, consecutive numbered lines, and a footer
/// whose counts agree with the lines.
pub fn check_text_page(bytes: &[u8], offset: u64) -> Result<PageInfo, String> {
    let s = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8: {e}"))?;
    let rest = s
        .strip_prefix("<path>")
        .ok_or("does not start with <path>")?;
    let (path, rest) = rest.split_once("</path>\n").ok_or("no </path>")?;
    let body = rest
        .strip_prefix("<type>novel-chapter</type>\n<content>\n")
        .ok_or("no <type>/<content> header")?;
    let body = body
        .strip_suffix("\n</content>\n")
        .ok_or("does not end with </content>\\n")?;
    let (lines_part, footer) = body
        .rsplit_once("\n\n")
        .ok_or("no blank line before the footer")?;
    let mut lines = Vec::new();
    for l in lines_part.split('\n') {
        let (n, t) = l
            .split_once(": ")
            .ok_or_else(|| format!("unnumbered line {l:?}"))?;
        let n: u64 = n.parse().map_err(|_| format!("bad line number in {l:?}"))?;
        lines.push((n, t.to_string()));
    }
    let num = |s: &str| {
        s.parse::<u64>()
            .map_err(|_| format!("bad number {s:?} in footer {footer:?}"))
    };
    let (total_lines, chars, truncated) = if let Some(f) = footer.strip_prefix("(输出截断。本章共 ")
    {
        // 本章共 N 行，已显示 a-b 行 / M 字。用 offset=b+1 继续阅读。)
        let (total, f) = f.split_once(" 行，已显示 ").ok_or("truncated footer")?;
        let (range, f) = f.split_once(" 行 / ").ok_or("truncated footer range")?;
        let (chars, f) = f
            .split_once(" 字。用 offset=")
            .ok_or("truncated footer chars")?;
        let next = f
            .strip_suffix(" 继续阅读。)")
            .ok_or("truncated footer end")?;
        let (a, b) = range.split_once('-').ok_or("footer range")?;
        let (a, b, next) = (num(a)?, num(b)?, num(next)?);
        let last = lines.last().map(|l| l.0).unwrap_or(0);
        if a != offset || b != last || next != b + 1 {
            return Err(format!(
                "footer {footer:?} disagrees with lines {offset}-{last}"
            ));
        }
        (num(total)?, num(chars)? as usize, true)
    } else if let Some(f) = footer.strip_prefix("(本章共 ") {
        let (total, f) = f.split_once(" 行 / ").ok_or("footer")?;
        let chars = f.strip_suffix(" 字)").ok_or("footer end")?;
        (num(total)?, num(chars)? as usize, false)
    } else {
        return Err(format!("unknown footer {footer:?}"));
    };
    let info = PageInfo {
        path: path.to_string(),
        offset,
        total_lines,
        chars,
        truncated,
        lines,
    };
    info.check_lines(offset)?;
    Ok(info)
}

/// The keys of a JSON page, in the order §1.6 writes them.
pub const JSON_KEYS: [&str; 9] = [
    "book",
    "chapter",
    "file",
    "path",
    "offset",
    "totalLines",
    "chars",
    "truncated",
    "lines",
];

/// Checks that `bytes` is one whole JSON page starting at `offset`: the nine
/// keys in order, consecutive lines, and `chars` matching them.
pub fn check_json_page(bytes: &[u8], offset: u64) -> Result<PageInfo, String> {
    let s = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8: {e}"))?;
    if !s.ends_with("}\n") {
        return Err("JSON page does not end with }\\n".into());
    }
    let v: Value = serde_json::from_str(s).map_err(|e| format!("JSON does not parse: {e}"))?;
    let obj = v.as_object().ok_or("not an object")?;
    let keys: Vec<&str> = obj.keys().map(String::as_str).collect();
    if keys != JSON_KEYS {
        return Err(format!("keys {keys:?}"));
    }
    if obj["chapter"] != obj["file"] {
        return Err("chapter != file".into());
    }
    let path = obj["path"].as_str().ok_or("path")?.to_string();
    let file = obj["file"].as_str().ok_or("file")?;
    if !path.ends_with(&format!("/{file}")) {
        return Err(format!("path {path:?} does not end with the file {file:?}"));
    }
    let lines = obj["lines"]
        .as_array()
        .ok_or("lines")?
        .iter()
        .map(|l| {
            let o = l
                .as_object()
                .filter(|o| o.keys().map(String::as_str).eq(["number", "text"]));
            let o = o.ok_or_else(|| format!("bad line object {l}"))?;
            Ok((
                o["number"].as_u64().ok_or("number")?,
                o["text"].as_str().ok_or("text")?.to_string(),
            ))
        })
        .collect::<Result<Vec<_>, String>>()?;
    let info = PageInfo {
        path,
        offset: obj["offset"].as_u64().ok_or("offset")?,
        total_lines: obj["totalLines"].as_u64().ok_or("totalLines")?,
        chars: obj["chars"].as_u64().ok_or("chars")? as usize,
        truncated: obj["truncated"].as_bool().ok_or("truncated")?,
        lines,
    };
    info.check_lines(offset)?;
    Ok(info)
}
