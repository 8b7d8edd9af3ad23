//! The mutator: rewrites, renames, deletes, re-encodes and shadows the
//! chapters while the readers read, then checks the library at rest.

use super::*;

#[derive(Default, Debug)]
pub(super) struct MutatorStats {
    pub(super) atomic_rewrite: u64,
    pub(super) atomic_same_size: u64,
    pub(super) in_place_truncate: u64,
    pub(super) in_place_overwrite: u64,
    pub(super) rename: u64,
    pub(super) delete_recreate: u64,
    pub(super) encoding_switch: u64,
    pub(super) shadow: u64,
}

fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) {
    // Not a chapter extension: the scan never sees the temp file.
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, dir.join(name)).unwrap();
}

/// Writes in 4096-byte `write` calls, to widen the window a reader can
/// catch; `truncate` empties the file first.
fn write_in_place(path: &Path, bytes: &[u8], truncate: bool) {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(truncate)
        .open(path)
        .unwrap();
    for chunk in bytes.chunks(4096) {
        f.write_all(chunk).unwrap();
    }
    f.set_len(bytes.len() as u64).unwrap();
}

pub(super) fn mutator(
    lib: Arc<Library>,
    versions: &mut [Version],
    stop: Arc<AtomicBool>,
) -> MutatorStats {
    let mut rng = Rng::new(0x5EED);
    let mut st = MutatorStats::default();
    let mut version = 1_000u64;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(rng.below(4)));
        let i = rng.range(1, CHAPTERS);
        let k = (i - 1) as usize;
        let Some(name) = lib.names.lock().unwrap()[k].clone() else {
            continue;
        };
        let path = lib.book.join(&name);
        version += 1;
        let v = &mut versions[k];
        let vanish = &lib.vanish[k];
        // The in-place chapters mostly get in-place writes.
        let op = if in_place(i) && v.enc == Enc::Utf8 && rng.chance(500) {
            2 + rng.below(2)
        } else {
            rng.below(8)
        };
        match op {
            0 => {
                v.seed = rng.next();
                v.lines = rng.range(1, 1300);
                v.crlf = rng.chance(300);
                v.version = version;
                write_atomic(&lib.book, &name, &encode(i, v));
                st.atomic_rewrite += 1;
            }
            1 => {
                v.version = version;
                write_atomic(&lib.book, &name, &encode(i, v));
                st.atomic_same_size += 1;
            }
            2 if in_place(i) && v.enc == Enc::Utf8 => {
                v.seed = rng.next();
                v.lines = rng.range(1, 1300);
                v.version = version;
                write_in_place(&path, &encode(i, v), true);
                st.in_place_truncate += 1;
            }
            3 if in_place(i) && v.enc == Enc::Utf8 => {
                let before = encode(i, v).len();
                v.version = version;
                let bytes = encode(i, v);
                assert_eq!(bytes.len(), before, "a same-size version");
                write_in_place(&path, &bytes, false);
                st.in_place_overwrite += 1;
            }
            4 => {
                vanish.fetch_add(1, Ordering::SeqCst);
                let new = if name == name_a(i) {
                    name_b(i)
                } else {
                    name_a(i)
                };
                std::fs::rename(&path, lib.book.join(&new)).unwrap();
                lib.names.lock().unwrap()[k] = Some(new);
                vanish.fetch_add(1, Ordering::SeqCst);
                st.rename += 1;
            }
            5 => {
                vanish.fetch_add(1, Ordering::SeqCst);
                lib.names.lock().unwrap()[k] = None;
                std::fs::remove_file(&path).unwrap();
                std::thread::sleep(Duration::from_millis(rng.range(1, 20)));
                // Re-created by a plain create + write: readers may catch it
                // empty or half written (valid UTF-8 either way).
                v.enc = Enc::Utf8;
                v.version = version;
                std::fs::write(&path, encode(i, v)).unwrap();
                lib.names.lock().unwrap()[k] = Some(name);
                vanish.fetch_add(1, Ordering::SeqCst);
                st.delete_recreate += 1;
            }
            6 => {
                v.enc = match v.enc {
                    Enc::Utf8 => Enc::Gbk,
                    Enc::Gbk => Enc::Utf16Le,
                    Enc::Utf16Le => Enc::Utf8,
                };
                v.version = version;
                write_atomic(&lib.book, &name, &encode(i, v));
                st.encoding_switch += 1;
            }
            7 => {
                vanish.fetch_add(1, Ordering::SeqCst);
                let shadow = lib.book.join(shadow_name(i));
                std::fs::write(&shadow, "另一份稿子").unwrap();
                std::thread::sleep(Duration::from_millis(rng.range(20, 150)));
                std::fs::remove_file(&shadow).unwrap();
                vanish.fetch_add(1, Ordering::SeqCst);
                st.shadow += 1;
            }
            _ => {}
        }
    }
    st
}

/// With the mutator stopped, every chapter's listing and pages through the
/// mount equal what the library computes from the files now.
pub(super) fn check_at_rest(mnt: &Path, root: &Path) {
    let lib = novelfs::storage::open_local(root).unwrap();
    let index = lib.scan_book(BOOK).unwrap();
    assert_eq!(index.chapters.len(), CHAPTERS as usize);
    for chapter in &index.chapters {
        let text = lib.load_chapter(OsStr::new(BOOK), chapter).unwrap();
        let dir = mnt.join(BOOK).join(&chapter.file);
        let mut listed: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        listed.sort();
        let mut want: Vec<String> = text
            .chain()
            .iter()
            .flat_map(|o| [format!("offset-{o}.txt"), format!("offset-{o}.json")])
            .collect();
        want.sort();
        assert_eq!(listed, want, "{}: listing at rest", chapter.file);
        for offset in text.chain() {
            let out = novelfs::library::PageOutput {
                book: BOOK.into(),
                file: chapter.file.clone(),
                path: lib.display_path(BOOK, &chapter.file),
                page: text.page(offset, 400).unwrap(),
            };
            let got = std::fs::read_to_string(dir.join(format!("offset-{offset}.txt"))).unwrap();
            assert!(
                got == out.text(),
                "{}: offset-{offset}.txt at rest is stale",
                chapter.file
            );
            let got = std::fs::read_to_string(dir.join(format!("offset-{offset}.json"))).unwrap();
            assert!(
                got == out.json(),
                "{}: offset-{offset}.json at rest is stale",
                chapter.file
            );
        }
    }
}
