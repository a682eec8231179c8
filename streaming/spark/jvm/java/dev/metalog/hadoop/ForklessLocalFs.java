package dev.metalog.hadoop;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumFs;

/**
 * The checksummed local file system of {@code FileContext} ({@code
 * fs.AbstractFileSystem.file.impl}): Hadoop's {@code LocalFs} over {@link ForklessRawLocalFs}.
 * Spark's streaming checkpoints and Delta's log write through it.
 */
public class ForklessLocalFs extends ChecksumFs {

  public ForklessLocalFs(URI uri, Configuration conf) throws IOException, URISyntaxException {
    super(new ForklessRawLocalFs(uri, conf));
  }
}
