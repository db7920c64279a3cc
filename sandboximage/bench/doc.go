// Package bench holds sandboxd's benchmarks (`make bench`). Each measures
// its baseline in the same run and reports the ratio with b.ReportMetric:
//
//   - a trivial tool over HTTP against a direct call of the same tool;
//   - bash `true` through sandboxd against a bare `sh -c true`, 5 ms apart;
//   - grep through sandboxd against plain rg on a tree of 50,000 files;
//   - glob through sandboxd against `rg --files`;
//   - read at a deep offset of a 1 GiB file (a `sandboxd call` process):
//     time against `wc -l` of the same file, and peak RSS.
//
// The fixtures (the tree, the big file, a sandboxd binary) are made only by
// the benchmarks, once, under $TMPDIR/agentsfleet-bench, and reused.
// Under -benchtime 1x each benchmark still repeats its measurement inside
// (p50 of many calls), so the figures mean something.
package bench
