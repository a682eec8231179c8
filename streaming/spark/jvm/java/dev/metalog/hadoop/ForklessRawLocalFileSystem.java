package dev.metalog.hadoop;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermissions;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's raw local file system without the processes it starts for every file.
 *
 * <p>Without Hadoop's native library, {@link RawLocalFileSystem} runs {@code chmod} to set a
 * new file's permission and {@code readlink} to tell whether a path is a symbolic link, each
 * a process forked from the JVM. A streaming micro-batch writes a few small files (its
 * offsets, its commit, a Delta log entry, the state store's changelog), each with a checksum
 * file and a rename, and paid about thirty processes for them. Here both are calls of
 * {@code java.nio.file}, with the same results; anything else is Hadoop's own.
 */
public class ForklessRawLocalFileSystem extends RawLocalFileSystem {

  @Override
  public void setPermission(Path path, FsPermission permission) throws IOException {
    if (permission.getStickyBit()) {
      super.setPermission(path, permission); // only chmod sets the sticky bit
      return;
    }
    Files.setPosixFilePermissions(pathToFile(path).toPath(),
        PosixFilePermissions.fromString(permission.toString())); // "rwxr-x---"
  }

  @Override
  public FileStatus getFileLinkStatus(Path path) throws IOException {
    if (Files.isSymbolicLink(pathToFile(path).toPath())) {
      return super.getFileLinkStatus(path);
    }
    return getFileStatus(path); // what Hadoop answers for a path that is not a link
  }
}
