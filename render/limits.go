package render

import (
	"fmt"
	"io/fs"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Limits bound what rendering one revision may read, decode and produce,
// so that a commit cannot exhaust the guard's memory, stack or time, nor
// take the process down for every Guard. A render that goes beyond one
// fails with a *LimitError (inside a *RenderError naming the file); the
// last good revision stays in force. A zero field takes the process's
// value (SetLimits), else DefaultLimits'. docs/security.md ("Rendering
// limits") says which threat each answers.
type Limits struct {
	// MaxFileBytes bounds one file a render reads: a manifest, a
	// kustomization or any file Kustomize reads, a chart's file, a values
	// file.
	MaxFileBytes int64
	// MaxTotalBytes bounds the bytes one render reads in all, a file
	// Kustomize reads again (a base used by several overlays) counted
	// again.
	MaxTotalBytes int64
	// MaxDepth bounds the nesting of objects and lists in a decoded file.
	MaxDepth int
	// MaxAliasValues bounds the values YAML aliases (and merge keys that
	// name an anchor) add to one file, all its documents together.
	MaxAliasValues int
	// MaxDecodedBytes bounds the text one file decodes to: its keys and
	// scalar values, each alias expansion counted again.
	MaxDecodedBytes int64
	// MaxFiles bounds the files and folders one listing of the tree
	// visits (a folder's walk, the tree Kustomize reads from): a Git tree
	// names its subtrees by hash, so a few kilobytes of tree objects that
	// name one folder ten times, ten levels deep, list ten billion paths.
	MaxFiles int
	// MaxYAMLNodes bounds the nodes (values, keys, lists, maps) the YAML
	// parser makes of one file, all its documents together, before any
	// other limit can look at them: a node takes about 180 bytes of heap,
	// and a value of a flow list as little as two bytes of the file.
	MaxYAMLNodes int
	// HelmTimeout bounds the time one Helm chart takes to render.
	HelmTimeout time.Duration
	// HelmMaxOutputBytes bounds the manifests one Helm render produces.
	HelmMaxOutputBytes int64
	// HelmMaxMemoryBytes bounds the memory of the process that renders
	// one Helm chart.
	HelmMaxMemoryBytes int64
}

// DefaultLimits are the limits of a render when nothing else is set.
func DefaultLimits() Limits {
	return Limits{
		MaxFileBytes:       16 << 20,
		MaxTotalBytes:      256 << 20,
		MaxDepth:           100,
		MaxAliasValues:     100_000,
		MaxDecodedBytes:    64 << 20,
		MaxYAMLNodes:       1_000_000,
		MaxFiles:           100_000,
		HelmTimeout:        30 * time.Second,
		HelmMaxOutputBytes: 64 << 20,
		HelmMaxMemoryBytes: 256 << 20,
	}
}

// processLimits are the limits SetLimits set: the guard's flags.
var processLimits atomic.Pointer[Limits]

// SetLimits sets the limits of every render whose RenderOptions do not
// set their own; zero fields keep DefaultLimits'. The guard calls it once
// at start with its flags.
func SetLimits(l Limits) {
	l = l.over(DefaultLimits())
	processLimits.Store(&l)
}

// effective returns l with its zero fields taken from the process's
// limits and the defaults.
func (l Limits) effective() Limits {
	base := DefaultLimits()
	if p := processLimits.Load(); p != nil {
		base = *p
	}
	return l.over(base)
}

// over returns l with its zero (or negative) fields taken from base.
func (l Limits) over(base Limits) Limits {
	pick := func(v, b int64) int64 {
		if v > 0 {
			return v
		}
		return b
	}
	return Limits{
		MaxFileBytes:       pick(l.MaxFileBytes, base.MaxFileBytes),
		MaxTotalBytes:      pick(l.MaxTotalBytes, base.MaxTotalBytes),
		MaxDepth:           int(pick(int64(l.MaxDepth), int64(base.MaxDepth))),
		MaxAliasValues:     int(pick(int64(l.MaxAliasValues), int64(base.MaxAliasValues))),
		MaxDecodedBytes:    pick(l.MaxDecodedBytes, base.MaxDecodedBytes),
		MaxYAMLNodes:       int(pick(int64(l.MaxYAMLNodes), int64(base.MaxYAMLNodes))),
		MaxFiles:           int(pick(int64(l.MaxFiles), int64(base.MaxFiles))),
		HelmTimeout:        time.Duration(pick(int64(l.HelmTimeout), int64(base.HelmTimeout))),
		HelmMaxOutputBytes: pick(l.HelmMaxOutputBytes, base.HelmMaxOutputBytes),
		HelmMaxMemoryBytes: pick(l.HelmMaxMemoryBytes, base.HelmMaxMemoryBytes),
	}
}

// The flags of the limits, named in LimitErrors.
const (
	flagMaxFileSize    = "render-max-file-size"
	flagMaxTotalSize   = "render-max-total-size"
	flagMaxDepth       = "render-max-depth"
	flagMaxAliases     = "render-max-yaml-aliases"
	flagMaxDecodedSize = "render-max-decoded-size"
	flagMaxYAMLNodes   = "render-max-yaml-nodes"
	flagMaxFiles       = "render-max-files"
	flagHelmTimeout    = "render-helm-timeout"
	flagHelmMaxOutput  = "render-helm-max-output"
	flagHelmMaxMemory  = "render-helm-max-memory"
)

// BindFlags registers a flag for every limit, with l's values as defaults
// (sizes are quantities: 16Mi, 1G, 500000).
func (l *Limits) BindFlags(fs *pflag.FlagSet) {
	fs.Var((*ByteSize)(&l.MaxFileBytes), flagMaxFileSize, "largest file a render reads (a manifest, a file Kustomize reads, a chart's file, a values file)")
	fs.Var((*ByteSize)(&l.MaxTotalBytes), flagMaxTotalSize, "bytes one render reads in all; a file Kustomize reads again (a base of several overlays) counts again")
	fs.IntVar(&l.MaxDepth, flagMaxDepth, l.MaxDepth, "deepest nesting of objects and lists in a YAML or JSON file (manifests, values, SOPS files)")
	fs.IntVar(&l.MaxAliasValues, flagMaxAliases, l.MaxAliasValues, "values YAML aliases may add to one file, all its documents together (billion laughs)")
	fs.Var((*ByteSize)(&l.MaxDecodedBytes), flagMaxDecodedSize, "text (keys and scalars) one YAML or JSON file may decode to, aliases expanded")
	fs.IntVar(&l.MaxYAMLNodes, flagMaxYAMLNodes, l.MaxYAMLNodes, "values, keys, lists and maps the YAML parser (or the JSON decoder) may make of one file (a Helm chart's output counts as one), all its documents together; about 180 bytes of memory each")
	fs.IntVar(&l.MaxFiles, flagMaxFiles, l.MaxFiles, "files and folders one listing of the repository's tree may visit (a folder's walk, the tree Kustomize reads from, the policy files of --policy-git)")
	fs.DurationVar(&l.HelmTimeout, flagHelmTimeout, l.HelmTimeout, "longest a Helm chart may take to render")
	fs.Var((*ByteSize)(&l.HelmMaxOutputBytes), flagHelmMaxOutput, "most manifests one Helm chart may render")
	fs.Var((*ByteSize)(&l.HelmMaxMemoryBytes), flagHelmMaxMemory, "most memory the process rendering one Helm chart may use")
}

// Validate checks that every limit is positive, naming the flag at fault.
func (l Limits) Validate() error {
	for _, c := range []struct {
		flag string
		v    int64
	}{
		{flagMaxFileSize, l.MaxFileBytes}, {flagMaxTotalSize, l.MaxTotalBytes}, {flagMaxDepth, int64(l.MaxDepth)},
		{flagMaxAliases, int64(l.MaxAliasValues)}, {flagMaxDecodedSize, l.MaxDecodedBytes}, {flagMaxYAMLNodes, int64(l.MaxYAMLNodes)}, {flagMaxFiles, int64(l.MaxFiles)}, {flagHelmTimeout, int64(l.HelmTimeout)},
		{flagHelmMaxOutput, l.HelmMaxOutputBytes}, {flagHelmMaxMemory, l.HelmMaxMemoryBytes},
	} {
		if c.v <= 0 {
			return fmt.Errorf("--%s: must be above 0", c.flag)
		}
	}
	if l.MaxFileBytes > l.MaxTotalBytes {
		return fmt.Errorf("--%s (%s) is above --%s (%s)", flagMaxFileSize, SizeText(l.MaxFileBytes), flagMaxTotalSize, SizeText(l.MaxTotalBytes))
	}
	return nil
}

// ByteSize is a flag of a number of bytes, written as a quantity.
type ByteSize int64

func (b *ByteSize) String() string { return SizeText(int64(*b)) }
func (b *ByteSize) Type() string   { return "quantity" }
func (b *ByteSize) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return err
	}
	v, ok := q.AsInt64()
	if !ok || v <= 0 {
		return fmt.Errorf("%q is not a positive number of bytes", s)
	}
	*b = ByteSize(v)
	return nil
}

// SizeText writes a number of bytes as a quantity (16Mi) when it is a
// whole number of KiB, MiB or GiB.
func SizeText(n int64) string {
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"Gi", 30}, {"Mi", 20}, {"Ki", 10}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// LimitError is a render that went beyond one of its Limits.
type LimitError struct {
	What  string // what went beyond the limit: "nested deeper than 100 levels"
	Flag  string // the flag that sets it, without dashes
	Value string // its value
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s (limit --%s=%s)", e.What, e.Flag, e.Value)
}

func depthError(max int) error {
	return &LimitError{What: fmt.Sprintf("nested deeper than %d levels", max), Flag: flagMaxDepth, Value: strconv.Itoa(max)}
}

func nodesError(max int) error {
	return &LimitError{What: fmt.Sprintf("more than %d nodes (values, keys, lists and maps) in the file", max), Flag: flagMaxYAMLNodes, Value: strconv.Itoa(max)}
}

func aliasError(max int) error {
	return &LimitError{What: fmt.Sprintf("YAML aliases add more than %d values to the file", max), Flag: flagMaxAliases, Value: strconv.Itoa(max)}
}

func decodedError(max int64) error {
	return &LimitError{What: fmt.Sprintf("the file decodes to more than %s of text", SizeText(max)), Flag: flagMaxDecodedSize, Value: SizeText(max)}
}

func fileSizeError(max int64) error {
	return &LimitError{What: fmt.Sprintf("the file is larger than %s", SizeText(max)), Flag: flagMaxFileSize, Value: SizeText(max)}
}

// listError is a listing of the tree that visited more than max files
// and folders.
func listError(max int) error {
	return &LimitError{What: fmt.Sprintf("the tree lists more than %d files and folders", max), Flag: flagMaxFiles, Value: strconv.Itoa(max)}
}

// ProcessLimits are the limits of a render that sets none: the guard's
// flags (SetLimits) over DefaultLimits.
func ProcessLimits() Limits { return Limits{}.effective() }

// WalkWithin walks fsys from root as fs.WalkDir does, within the files
// and folders the process's limits allow (MaxFiles, root included): beyond
// them it returns a *LimitError.
func WalkWithin(fsys fs.FS, root string, fn fs.WalkDirFunc) error {
	return walkWithin(fsys, root, ProcessLimits().MaxFiles, fn)
}

// FileSizeError is a file larger than max bytes (MaxFileBytes).
func FileSizeError(max int64) error { return fileSizeError(max) }

func walkWithin(fsys fs.FS, root string, max int, fn fs.WalkDirFunc) error {
	n := 0
	return fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if n++; n > max {
			return listError(max)
		}
		return fn(p, d, err)
	})
}

func totalSizeError(max int64) error {
	return &LimitError{What: fmt.Sprintf("the render reads more than %s in all", SizeText(max)), Flag: flagMaxTotalSize, Value: SizeText(max)}
}
