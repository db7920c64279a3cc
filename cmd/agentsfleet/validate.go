package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
)

// validate parses each file and prints "FILE: ok NAME HASH", or every
// problem found. It fails if any file is not a valid Definition.
func validate(files []string, out io.Writer) error {
	if len(files) == 0 {
		return fmt.Errorf("%w: validate needs at least one file", errUsage)
	}
	bad := 0
	for _, name := range files {
		format, ok := fleet.FormatOf(name)
		if !ok {
			return fmt.Errorf("%w: %s: a Definition file ends in .toml or .json", errUsage, name)
		}
		data, err := os.ReadFile(name)
		if err != nil {
			return fmt.Errorf("read Definition: %w", err)
		}
		def, err := fleet.Parse(data, format)
		var defErr *fleet.Error
		switch {
		case errors.As(err, &defErr):
			bad++
			fmt.Fprintf(out, "%s: %v\n", name, defErr)
		case err != nil:
			return fmt.Errorf("%s: %w", name, err)
		default:
			fmt.Fprintf(out, "%s: ok %s %s\n", name, def.Name, def.Hash())
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d Definitions are not valid", bad, len(files))
	}
	return nil
}
