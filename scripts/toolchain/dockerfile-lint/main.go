// dockerfile-lint runs BuildKit's Dockerfile checks (what `docker build --check`
// reports) on files, without a Docker daemon or a build:
//
//	dockerfile-lint FILE...
//
// Base images are never resolved (no registry is contacted). Prints one line
// per warning (file:line: Rule: message) and exits 1 when there is any, 2 when
// a file cannot be read or parsed.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/moby/buildkit/client/llb"
	"github.com/moby/buildkit/client/llb/sourceresolver"
	"github.com/moby/buildkit/frontend/dockerfile/dockerfile2llb"
	digest "github.com/opencontainers/go-digest"
)

// offline never reaches a registry: checks that need a base image's config
// are skipped, the rest run on the Dockerfile alone.
type offline struct{}

func (offline) ResolveImageConfig(context.Context, string, sourceresolver.Opt) (string, digest.Digest, []byte, error) {
	return "", "", nil, errors.New("dockerfile-lint resolves no images")
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: dockerfile-lint FILE...")
		os.Exit(2)
	}
	warnings := 0
	for _, path := range os.Args[1:] {
		dt, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		// The results carry their source; an empty definition stands in for the build context.
		source := llb.NewSourceMap(nil, path, "Dockerfile", dt)
		source.Definition = &llb.Definition{}
		results, err := dockerfile2llb.DockerfileLint(context.Background(), dt, dockerfile2llb.ConvertOpt{SourceMap: source, MetaResolver: offline{}})
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
			os.Exit(2)
		}
		for _, w := range results.Warnings {
			line := 0
			if len(w.Location.Ranges) > 0 {
				line = int(w.Location.Ranges[0].Start.Line)
			}
			fmt.Printf("%s:%d: %s: %s\n", path, line, w.RuleName, w.Detail)
			warnings++
		}
	}
	if warnings > 0 {
		os.Exit(1)
	}
}
