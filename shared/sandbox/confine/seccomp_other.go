//go:build linux && !amd64 && !arm64

package confine

// nativeTable is nil where there is no filter (see nativeArch).
var nativeTable *sysTable
