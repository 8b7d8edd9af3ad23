//! One source file read as far as the layout needs: its tokens (comments
//! gone, literals kept whole), its `mod` declarations with their
//! `#[path]` and `#[cfg(test)]`, and every path it writes from `crate`,
//! `super` or `self` (in `use` trees, code and attributes), each with the
//! module it is written in.

/// A module path from the crate root (`["fs", "source"]`).
pub(super) type ModPath = Vec<String>;

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Str(String),
    /// `::`
    Sep,
    Punct(char),
}

/// The tokens of Rust source, without comments; string literals keep
/// their text (a `#[path]` needs it), lifetimes and char literals go.
fn tokens(src: &str) -> Vec<Tok> {
    let s: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let ident_char = |c: char| c.is_alphanumeric() || c == '_';
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < s.len() && s[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < s.len() {
                if s[i] == '/' && s.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if s[i] == '*' && s.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == '"' {
            let mut text = String::new();
            i += 1;
            while i < s.len() && s[i] != '"' {
                if s[i] == '\\' {
                    i += 1;
                }
                text.extend(s.get(i));
                i += 1;
            }
            i += 1;
            out.push(Tok::Str(text));
        } else if c == '\'' {
            if next == Some('\\') {
                // `'\n'`, `'\''`, `'\u{…}'`: past the escaped character.
                i += 3;
                while i < s.len() && s[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if s.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
                while i < s.len() && ident_char(s[i]) {
                    i += 1;
                }
            }
        } else if ident_char(c) {
            let start = i;
            while i < s.len() && ident_char(s[i]) {
                i += 1;
            }
            let word: String = s[start..i].iter().collect();
            let hashes = s[i..].iter().take_while(|&&c| c == '#').count();
            let raw = matches!(word.as_str(), "r" | "br" | "cr") && s.get(i + hashes) == Some(&'"');
            if word == "r" && hashes == 1 && !raw {
                // A raw identifier (`r#type`): the identifier follows.
                i += 1;
            } else if raw {
                i += hashes + 1;
                let start = i;
                let closes = |at: usize| {
                    s.get(at) == Some(&'"') && (1..=hashes).all(|h| s.get(at + h) == Some(&'#'))
                };
                while i < s.len() && !closes(i) {
                    i += 1;
                }
                out.push(Tok::Str(s[start..i].iter().collect()));
                i += 1 + hashes;
            } else if matches!(word.as_str(), "b" | "c") && matches!(s.get(i), Some('"' | '\'')) {
                // A byte string or byte: the literal follows.
            } else {
                out.push(Tok::Ident(word));
            }
        } else if c == ':' && next == Some(':') {
            out.push(Tok::Sep);
            i += 2;
        } else {
            out.push(Tok::Punct(c));
            i += 1;
        }
    }
    out
}

fn ident(t: Option<&Tok>) -> Option<&str> {
    match t {
        Some(Tok::Ident(w)) => Some(w),
        _ => None,
    }
}

/// The index just past the bracket that closes the one at `open`.
fn matching(toks: &[Tok], open: usize) -> usize {
    let (o, c) = match toks[open] {
        Tok::Punct('{') => ('{', '}'),
        Tok::Punct('[') => ('[', ']'),
        _ => ('(', ')'),
    };
    let mut depth = 0;
    for (i, t) in toks.iter().enumerate().skip(open) {
        if *t == Tok::Punct(o) {
            depth += 1;
        } else if *t == Tok::Punct(c) {
            depth -= 1;
            if depth == 0 {
                return i + 1;
            }
        }
    }
    toks.len()
}

/// A path written in a file: the module it is written in (inline
/// modules included) and its segments.
pub(super) struct Written {
    pub(super) at: ModPath,
    pub(super) segments: Vec<String>,
    pub(super) in_test: bool,
}

/// A `mod` declaration of a module in a file of its own.
pub(super) struct Declared {
    pub(super) at: ModPath,
    pub(super) name: String,
    pub(super) path_attr: Option<String>,
    pub(super) in_test: bool,
    /// Declared inside inline modules of the file (their names).
    pub(super) inline: Vec<String>,
}

/// What one file declares and names.
#[derive(Default)]
pub(super) struct Scan {
    pub(super) declared: Vec<Declared>,
    pub(super) inline_modules: Vec<ModPath>,
    pub(super) paths: Vec<Written>,
    pub(super) names_fuser: bool,
}

/// The full paths of a `use` tree starting at `toks[i]`, each with
/// `prefix` before it; returns the index past the tree.
fn use_tree(toks: &[Tok], mut i: usize, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let mut path = prefix.to_vec();
    loop {
        match toks.get(i) {
            // `{self, …}`: the group's prefix itself.
            Some(Tok::Ident(w))
                if w == "self" && !prefix.is_empty() && path.len() == prefix.len() =>
            {
                out.push(path);
                return i + 1;
            }
            Some(Tok::Ident(w)) => {
                path.push(w.clone());
                i += 1;
            }
            Some(Tok::Punct('{')) => {
                let end = matching(toks, i) - 1;
                i += 1;
                while i < end {
                    i = use_tree(toks, i, &path, out);
                    while i < end && toks[i] != Tok::Punct(',') {
                        i += 1;
                    }
                    i += 1;
                }
                return end + 1;
            }
            Some(Tok::Punct('*')) => {
                out.push(path);
                return i + 1;
            }
            _ => {
                out.push(path);
                return i;
            }
        }
        match toks.get(i) {
            Some(Tok::Sep) => i += 1,
            _ => {
                out.push(path);
                return i;
            }
        }
    }
}

/// The path starting at `toks[i]` if one starts there with `crate::`,
/// `super::` or `self::` (`crate::x::f()` in code).
fn code_path(toks: &[Tok], i: usize) -> Option<Vec<String>> {
    let first = ident(toks.get(i)).filter(|w| matches!(*w, "crate" | "super" | "self"))?;
    if toks.get(i + 1) != Some(&Tok::Sep) || (i > 0 && toks[i - 1] == Tok::Sep) {
        return None;
    }
    let mut segments = vec![first.to_string()];
    let mut at = i + 1;
    while toks.get(at) == Some(&Tok::Sep) {
        match ident(toks.get(at + 1)) {
            Some(seg) => segments.push(seg.to_string()),
            None => break,
        }
        at += 2;
    }
    Some(segments)
}

fn is_cfg_test(attr: &[Tok]) -> bool {
    attr == [
        Tok::Ident("cfg".into()),
        Tok::Punct('('),
        Tok::Ident("test".into()),
        Tok::Punct(')'),
    ]
}

/// Reads the declarations and paths of a file whose module is `module`.
pub(super) fn scan(src: &str, module: &ModPath) -> Scan {
    let toks = tokens(src);
    let mut out = Scan {
        names_fuser: toks.contains(&Tok::Ident("fuser".into())),
        ..Scan::default()
    };
    let mut attrs: Vec<Vec<Tok>> = Vec::new();
    // Open inline modules: (index past their closing brace, name, cfg(test)).
    let mut inline: Vec<(usize, String, bool)> = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        while inline.last().is_some_and(|(end, _, _)| i >= *end) {
            inline.pop();
        }
        let mut here = module.clone();
        here.extend(inline.iter().map(|(_, n, _)| n.clone()));
        let in_test = inline.iter().any(|(_, _, t)| *t);
        let t = &toks[i];
        let bang = toks.get(i + 1) == Some(&Tok::Punct('!'));
        let open = i + 1 + bang as usize;
        if *t == Tok::Punct('#') && toks.get(open) == Some(&Tok::Punct('[')) {
            let end = matching(&toks, open);
            if !bang {
                attrs.push(toks[open + 1..end - 1].to_vec());
            }
            // An attribute names code too (`value_parser = crate::x::f`).
            for j in open..end {
                if let Some(segments) = code_path(&toks, j) {
                    out.paths.push(Written {
                        at: here.clone(),
                        segments,
                        in_test,
                    });
                }
            }
            i = end;
            continue;
        }
        match t {
            Tok::Ident(w) if w == "mod" => {
                let name = ident(toks.get(i + 1)).unwrap_or_default().to_string();
                let test = in_test || attrs.iter().any(|a| is_cfg_test(a));
                if toks.get(i + 2) == Some(&Tok::Punct('{')) {
                    let end = matching(&toks, i + 2);
                    let mut m = here.clone();
                    m.push(name.clone());
                    out.inline_modules.push(m);
                    inline.push((end, name, test));
                    i += 3;
                } else {
                    let path_attr = attrs.iter().find_map(|a| match a.as_slice() {
                        [Tok::Ident(p), Tok::Punct('='), Tok::Str(s)] if p == "path" => {
                            Some(s.clone())
                        }
                        _ => None,
                    });
                    out.declared.push(Declared {
                        at: here,
                        name,
                        path_attr,
                        in_test: test,
                        inline: inline.iter().map(|(_, n, _)| n.clone()).collect(),
                    });
                    i += 2;
                }
                attrs.clear();
                continue;
            }
            Tok::Ident(w) if w == "use" => {
                let start = i + 1 + (toks.get(i + 1) == Some(&Tok::Sep)) as usize;
                let mut paths = Vec::new();
                i = use_tree(&toks, start, &[], &mut paths);
                for segments in paths {
                    out.paths.push(Written {
                        at: here.clone(),
                        segments,
                        in_test,
                    });
                }
                continue;
            }
            Tok::Ident(_) if code_path(&toks, i).is_some() => {
                let segments = code_path(&toks, i).unwrap_or_default();
                i += 2 * segments.len() - 1;
                out.paths.push(Written {
                    at: here,
                    segments,
                    in_test,
                });
                continue;
            }
            Tok::Punct(';' | '{' | '}' | ',') => attrs.clear(),
            _ => {}
        }
        i += 1;
    }
    out
}
