package dev.metalog.hadoop;

import org.apache.hadoop.fs.LocalFileSystem;

/**
 * The checksummed local file system ({@code fs.file.impl}) over {@link
 * ForklessRawLocalFileSystem}: Hadoop's {@link LocalFileSystem} but for the processes.
 */
public class ForklessLocalFileSystem extends LocalFileSystem {

  public ForklessLocalFileSystem() {
    super(new ForklessRawLocalFileSystem());
  }
}
