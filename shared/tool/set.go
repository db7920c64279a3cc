package tool

import (
	"fmt"
	"slices"
	"strings"
)

// Set is the contracts one package defines, gathered as each is defined by
// DefineIn, so that the package's list of tools is written nowhere but in
// the contracts themselves. Declare a Set and its contracts as
// package-level variables: they are then all in it before any other
// package can call Specs, which is safe for concurrent use from then on.
type Set struct {
	specs []Spec
}

// DefineIn is Define, and adds the contract to set. It panics as Define
// does, and when set already holds a tool of the same name.
func DefineIn[T any](set *Set, a About) *Def[T] {
	d := Define[T](a)
	for _, s := range set.specs {
		if s.Name() == d.Name() {
			panic(fmt.Sprintf("tool.DefineIn %s: the set holds a tool of that name already", d.Name()))
		}
	}
	set.specs = append(set.specs, d)
	return d
}

// Specs returns the contracts of set, sorted by name. The caller owns the
// slice; the specs are shared and immutable.
func (s *Set) Specs() []Spec {
	out := slices.Clone(s.specs)
	slices.SortFunc(out, func(a, b Spec) int { return strings.Compare(a.Name(), b.Name()) })
	return out
}
