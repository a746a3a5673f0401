// Package report is the figures of `make bench`: a figure against its target,
// its one-line form, the JSON lines the benchmarks append, and the parsing of
// `go test -bench` output.
package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// Figure is one measured figure of a benchmark against its target. Its
// Line is what `make bench` prints; the same goes to bench/results.json.
type Figure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	// Op and Target: the figure passes when Value Op Target holds.
	Op     string  `json:"op"`
	Target float64 `json:"target"`
	// Baseline, when set, is the figure it is compared with, measured side
	// by side in the same run (the target is derived from it).
	Baseline     *float64 `json:"baseline,omitempty"`
	BaselineUnit string   `json:"baselineUnit,omitempty"`
	Pass         bool     `json:"pass"`
	// Benchmark is the Go benchmark that measured it; Note says on what.
	Benchmark string `json:"benchmark,omitempty"`
	Note      string `json:"note,omitempty"`
}

// Ops a target may use.
const (
	AtMost   = "<="
	Below    = "<"
	AtLeast  = ">="
	Above    = ">"
	ExactlyN = "=="
)

// NewFigure returns a figure with Pass computed from value, op and target.
func NewFigure(name string, value float64, unit, op string, target float64) Figure {
	f := Figure{Name: name, Value: value, Unit: unit, Op: op, Target: target}
	f.Pass = holds(value, op, target)
	return f
}

// WithBaseline returns f with a baseline figure.
func (f Figure) WithBaseline(v float64, unit string) Figure {
	f.Baseline, f.BaselineUnit = &v, unit
	return f
}

func holds(v float64, op string, target float64) bool {
	if math.IsNaN(v) {
		return false
	}
	switch op {
	case AtMost:
		return v <= target
	case Below:
		return v < target
	case AtLeast:
		return v >= target
	case Above:
		return v > target
	case ExactlyN:
		return v == target
	}
	return false
}

// Line renders the figure as
// `bench: <name> <value> <unit> target <op> <value> [baseline <value> <unit>] PASS|FAIL`.
func (f Figure) Line() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "bench: %s %s %s target %s %s", f.Name, FormatValue(f.Value), f.Unit, f.Op, FormatValue(f.Target))
	if f.Baseline != nil {
		fmt.Fprintf(&sb, " baseline %s %s", FormatValue(*f.Baseline), f.BaselineUnit)
	}
	if f.Pass {
		sb.WriteString(" PASS")
	} else {
		sb.WriteString(" FAIL")
	}
	return sb.String()
}

// FormatValue prints a figure with the precision it deserves: whole numbers
// as they are, others with three significant digits at most, no exponent.
func FormatValue(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "NaN"
	case v == math.Trunc(v) || a >= 100:
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	case a >= 10:
		return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
	case a >= 1:
		return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

// AppendFigure appends f as one JSON line to the file at path.
func AppendFigure(path string, f Figure) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(f); err != nil { // one line, with its newline
		return err
	}
	file, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("append figure to %s: %w", path, err)
	}
	if _, err := file.Write(buf.Bytes()); err != nil {
		file.Close()
		return fmt.Errorf("append figure to %s: %w", path, err)
	}
	return file.Close()
}

// ReadFigures reads the JSON lines AppendFigure wrote.
func ReadFigures(path string) ([]Figure, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	var out []Figure
	sc := bufio.NewScanner(file)
	for n := 1; sc.Scan(); n++ {
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		var f Figure
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		out = append(out, f)
	}
	return out, sc.Err()
}

// GoBench is one result line of `go test -bench` output.
type GoBench struct {
	Name    string             // without the -GOMAXPROCS suffix
	N       int                // iterations
	Metrics map[string]float64 // by unit: ns/op, B/op, allocs/op, custom units
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+(\d+)\s+(.*)$`)

// ParseGoBench reads `go test -bench` output and returns its result lines.
func ParseGoBench(r io.Reader) ([]GoBench, error) {
	var out []GoBench
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[2])
		res := GoBench{Name: m[1], N: n, Metrics: map[string]float64{}}
		fields := strings.Fields(m[3])
		for i := 0; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				break
			}
			res.Metrics[fields[i+1]] = v
		}
		out = append(out, res)
	}
	return out, sc.Err()
}
