//! The requests that would change the tree, all refused with EROFS: the
//! library is the source of truth and the mount is a view of it. One table,
//! expanded into the adapter's `Filesystem` impl by `refuse_writes!()`.

/// Expands each row `op(argument types) -> reply type;` into a method that
/// answers EROFS.
macro_rules! read_only {
    ($($op:ident($($arg:ty),*) -> $reply:ty;)*) => {$(
        fn $op(&self, _req: &fuser::Request, $(_: $arg,)* reply: $reply) {
            $crate::mount::serving::runner::Fails::fail(reply, novelfs_fs::Error::ReadOnly);
        }
    )*};
}

/// Every write request of `fuser::Filesystem`.
macro_rules! refuse_writes {
    () => {
        read_only! {
        setattr(fuser::INodeNo, Option<u32>, Option<u32>, Option<u32>, Option<u64>,
            Option<fuser::TimeOrNow>, Option<fuser::TimeOrNow>, Option<std::time::SystemTime>, Option<fuser::FileHandle>,
            Option<std::time::SystemTime>, Option<std::time::SystemTime>, Option<std::time::SystemTime>, Option<fuser::BsdFileFlags>)
            -> fuser::ReplyAttr;
        mknod(fuser::INodeNo, &std::ffi::OsStr, u32, u32, u32) -> fuser::ReplyEntry;
        mkdir(fuser::INodeNo, &std::ffi::OsStr, u32, u32) -> fuser::ReplyEntry;
        unlink(fuser::INodeNo, &std::ffi::OsStr) -> fuser::ReplyEmpty;
        rmdir(fuser::INodeNo, &std::ffi::OsStr) -> fuser::ReplyEmpty;
        symlink(fuser::INodeNo, &std::ffi::OsStr, &std::path::Path) -> fuser::ReplyEntry;
        rename(fuser::INodeNo, &std::ffi::OsStr, fuser::INodeNo, &std::ffi::OsStr, fuser::RenameFlags) -> fuser::ReplyEmpty;
        link(fuser::INodeNo, fuser::INodeNo, &std::ffi::OsStr) -> fuser::ReplyEntry;
        write(fuser::INodeNo, fuser::FileHandle, u64, &[u8], fuser::WriteFlags, fuser::OpenFlags, Option<fuser::LockOwner>)
            -> fuser::ReplyWrite;
        create(fuser::INodeNo, &std::ffi::OsStr, u32, u32, i32) -> fuser::ReplyCreate;
        setxattr(fuser::INodeNo, &std::ffi::OsStr, &[u8], i32, u32) -> fuser::ReplyEmpty;
        removexattr(fuser::INodeNo, &std::ffi::OsStr) -> fuser::ReplyEmpty;
        }
    };
}
