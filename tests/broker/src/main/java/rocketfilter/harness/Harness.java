package rocketfilter.harness;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;

/**
 * Runs scenarios against an in-process RocketMQ name server and broker, one fresh broker per
 * scenario, all in this JVM.
 *
 * <pre>
 *   java -cp ... rocketfilter.harness.Harness SCENARIO.json OUTDIR [SCENARIO.json OUTDIR ...]
 *   java -cp ... rocketfilter.harness.Harness --batch PAIRS.tsv     (lines: SCENARIO.json TAB OUTDIR)
 * </pre>
 *
 * A scenario that fails writes OUTDIR/error.txt and the others still run; the exit status is 1
 * when any failed.
 */
public final class Harness {
    private static final int MAX_ATTEMPTS = 3;

    private Harness() {
    }

    public static void main(String[] args) throws IOException {
        List<String[]> pairs = new ArrayList<>();
        if (args.length == 2 && args[0].equals("--batch")) {
            for (String line : Files.readAllLines(Paths.get(args[1]), StandardCharsets.UTF_8)) {
                if (line.isBlank()) {
                    continue;
                }
                String[] p = line.split("\t");
                if (p.length != 2) {
                    throw new IllegalArgumentException(args[1] + ": a line is not SCENARIO<TAB>OUTDIR: " + line);
                }
                pairs.add(p);
            }
        } else if (args.length > 0 && args.length % 2 == 0) {
            for (int i = 0; i < args.length; i += 2) {
                pairs.add(new String[] {args[i], args[i + 1]});
            }
        } else {
            System.err.println("usage: Harness SCENARIO.json OUTDIR [...] | Harness --batch PAIRS.tsv");
            System.exit(2);
        }
        int failed = 0;
        List<Thread> shutdowns = new ArrayList<>();
        for (String[] p : pairs) {
            Path outdir = Paths.get(p[1]);
            long t0 = System.nanoTime();
            ScenarioRun run = null;
            try {
                for (int attempt = 1; ; attempt++) {
                    run = new ScenarioRun(Paths.get(p[0]), outdir);
                    try {
                        run.run();
                        break;
                    } catch (ScenarioRun.TableMovedException e) {
                        // Rare (a consumer's re-stamp after the settle check); the scenario is rerun
                        // on a fresh broker rather than compared against two tables.
                        if (attempt == MAX_ATTEMPTS) {
                            throw e;
                        }
                        System.err.println("harness: " + e.getMessage() + "; running it again");
                        run.shutdownServers();
                        run = null;
                    }
                }
                System.err.printf("harness: %s done in %.1f s%n", p[0], (System.nanoTime() - t0) / 1e9);
            } catch (Throwable t) {
                failed++;
                Files.createDirectories(outdir);
                StringBuilder sb = new StringBuilder(t.toString()).append('\n');
                for (StackTraceElement e : t.getStackTrace()) {
                    sb.append("  at ").append(e).append('\n');
                }
                Files.writeString(outdir.resolve("error.txt"), sb.toString());
                System.err.println("harness: " + p[0] + " FAILED: " + t);
            }
            if (run != null) {
                Thread t = new Thread(run::shutdownServers, "shutdown-" + outdir.getFileName());
                t.start();
                shutdowns.add(t);
            }
        }
        for (Thread t : shutdowns) {
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        // Netty and the store keep non-daemon threads alive after shutdown in some versions.
        System.exit(failed == 0 ? 0 : 1);
    }
}
