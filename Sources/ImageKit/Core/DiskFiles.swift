internal import CImageCodecs
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The POSIX file operations the disk cache needs, with errno turned into ``ImageError``.
enum DiskFiles {
    static let metadataAttribute = "user.imagekit.meta"

    static func error(_ what: String, _ path: String, code: Int32 = errno) -> ImageError {
        ImageError(.ioError, "\(what) \(path): \(String(cString: strerror(code)))")
    }

    /// `mkdir -p`.
    static func createDirectory(_ path: String) throws(ImageError) {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue { return }
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw ImageError(.ioError, "cannot create \(path): \(error.localizedDescription)")
        }
    }

    struct FileInfo {
        var size: Int
        /// Allocated bytes (`st_blocks × 512`), what the size limit counts.
        var allocated: Int
        var modification: Date
        var access: Date
        var isRegular: Bool
    }

    static func info(_ status: stat) -> FileInfo {
        FileInfo(
            size: Int(status.st_size), allocated: Int(status.st_blocks) * 512,
            modification: date(status.st_mtim), access: date(status.st_atim),
            isRegular: status.st_mode & S_IFMT == S_IFREG)
    }

    static func date(_ time: timespec) -> Date {
        Date(timeIntervalSince1970: Double(time.tv_sec) + Double(time.tv_nsec) / 1e9)
    }

    static func timespec(_ date: Date) -> Glibc.timespec {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        return Glibc.timespec(tv_sec: Int(seconds), tv_nsec: Int((date.timeIntervalSince1970 - seconds) * 1e9))
    }

    static func stat(_ path: String) -> FileInfo? {
        var status = Glibc.stat()
        guard lstat(path, &status) == 0 else { return nil }
        return info(status)
    }

    /// Reads a whole regular file; nil when it does not exist (or vanished meanwhile), is not a
    /// regular file, or — with `followsLinks` false — is a symbolic link. A file over `maxBytes`
    /// is ``ImageError/Code/responseTooLarge`` before anything is read.
    static func read(_ path: String, followsLinks: Bool = true, maxBytes: Int? = nil) throws(ImageError) -> (
        Data, FileInfo
    )? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | (followsLinks ? 0 : O_NOFOLLOW))
        guard descriptor >= 0 else {
            if errno == ENOENT || errno == ENOTDIR || (!followsLinks && errno == ELOOP) { return nil }
            throw error("cannot open", path)
        }
        defer { close(descriptor) }
        var status = Glibc.stat()
        guard fstat(descriptor, &status) == 0 else { throw error("cannot stat", path) }
        let fileInfo = info(status)
        guard fileInfo.isRegular else { return nil }
        if let maxBytes, fileInfo.size > maxBytes {
            throw ImageError(.responseTooLarge, "\(path) is over \(maxBytes) bytes")
        }
        var data = Data(count: fileInfo.size)
        var offset = 0
        let failure: Int32? = data.withUnsafeMutableBytes { buffer in
            while offset < fileInfo.size {
                let count = Glibc.read(descriptor, buffer.baseAddress! + offset, fileInfo.size - offset)
                if count < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                if count == 0 { break }  // shrunk behind our back
                offset += count
            }
            return nil
        }
        if let failure { throw error("cannot read", path, code: failure) }
        if offset < fileInfo.size { data.count = offset }
        return (data, fileInfo)
    }

    /// Writes `data` to a hidden temporary file in `directory`, attaches `attribute` as the
    /// metadata xattr when given, sets both file times to `date`, and renames it to `name`:
    /// readers see the old entry or the complete new one, never a half-written file.
    /// - Returns: the new file's info, and whether the xattr was refused as unsupported.
    static func writeAtomically(
        _ data: Data, directory: String, name: String, attribute: [UInt8]?,
        date: Date, synchronize: Bool
    ) throws(ImageError) -> (FileInfo, xattrUnsupported: Bool) {
        let temporary = directory + "/.tmp-" + UUID().uuidString
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw error("cannot create", temporary) }
        var renamed = false
        defer {
            close(descriptor)
            if !renamed { unlink(temporary) }
        }
        let writeFailure: Int32? = data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let count = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if count < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                offset += count
            }
            return nil
        }
        if let writeFailure { throw error("cannot write", temporary, code: writeFailure) }
        var xattrUnsupported = false
        if let attribute {
            let status = attribute.withUnsafeBytes {
                ik_fsetxattr(descriptor, metadataAttribute, $0.baseAddress!, $0.count)
            }
            if status != 0 {
                if status == ENOTSUP || status == EOPNOTSUPP || status == EPERM {
                    xattrUnsupported = true
                } else {
                    throw error("cannot set metadata on", temporary, code: status)
                }
            }
        }
        var times = [timespec(date), timespec(date)]
        _ = futimens(descriptor, &times)
        if synchronize && fsync(descriptor) != 0 { throw error("cannot sync", temporary) }
        var status = Glibc.stat()
        guard fstat(descriptor, &status) == 0 else { throw error("cannot stat", temporary) }
        guard rename(temporary, directory + "/" + name) == 0 else { throw error("cannot rename", temporary) }
        renamed = true
        return (info(status), xattrUnsupported)
    }

    /// Writes a small file atomically (sidecar metadata).
    static func writeSmallFile(_ bytes: [UInt8], directory: String, name: String) throws(ImageError) {
        _ = try writeAtomically(
            Data(bytes), directory: directory, name: name, attribute: nil, date: Date(), synchronize: false)
    }

    /// Replaces the metadata xattr on an open file; 0 or errno.
    static func setAttribute(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32 {
        ik_fsetxattr(descriptor, metadataAttribute, bytes.baseAddress!, bytes.count)
    }

    static func readAttribute(_ path: String) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { ik_getxattr(path, metadataAttribute, $0.baseAddress!, $0.count) }
        guard count >= 0 else { return nil }
        return Array(buffer.prefix(Int(count)))
    }

    /// Sets the access time explicitly (mounts with noatime or relatime do not keep it).
    static func touchAccess(_ path: String, date: Date) {
        let time = timespec(date)
        _ = ik_set_access_time(path, Int64(time.tv_sec), time.tv_nsec)
    }

    /// Removes a file; true when it existed.
    @discardableResult
    static func remove(_ path: String) -> Bool {
        unlink(path) == 0
    }

    /// The names in `directory` (no `.`/`..`), read with readdir.
    static func list(_ directory: String) -> [String] {
        guard let handle = opendir(directory) else { return [] }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// An advisory lock on `path` (created if needed), held until `release`.
    final class Lock {
        let descriptor: Int32
        init?(_ path: String, blocking: Bool) {
            let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else { return nil }
            guard flock(descriptor, LOCK_EX | (blocking ? 0 : LOCK_NB)) == 0 else {
                close(descriptor)
                return nil
            }
            self.descriptor = descriptor
        }
        deinit {
            flock(descriptor, LOCK_UN)
            close(descriptor)
        }
    }
}
