// SPDX-FileCopyrightText: 2026 The gardener-extension-kube-vip authors
//
// SPDX-License-Identifier: Apache-2.0

// Package imagebuild builds the project's container images without Docker or a registry:
// it reads the final stage of a Dockerfile, lays the project's locally built binaries onto
// a stand-in for the distroless base (or a binary built elsewhere onto scratch, as
// upstream kube-vip's image is), and writes a docker-archive tarball that
// `ctr -n k8s.io images import` loads into a node's containerd.
package imagebuild

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// Copy is one COPY instruction of the final stage.
type Copy struct {
	// From is the --from stage (the builder), empty for the build context.
	From string
	// Src is the path in that stage or in the context.
	Src string
	// Dst is the path in the image.
	Dst string
}

// Stage is what the final stage of a Dockerfile says about the image it produces.
type Stage struct {
	// Base is the FROM image, e.g. gcr.io/distroless/static-debian12:nonroot.
	Base string
	// Copies are the COPY instructions in order.
	Copies []Copy
	// User is the USER instruction ("uid:gid" or "uid"), empty if there is none.
	User string
	// Entrypoint is the exec-form ENTRYPOINT.
	Entrypoint []string

	// builderInstructions are instructions only a builder stage may use (RUN, ...).
	builderInstructions []string
}

// ParseDockerfile reads a Dockerfile and returns its final stage. It understands the
// instructions the project's final stages use (FROM, COPY, USER, ENTRYPOINT in exec form);
// any other instruction in the final stage is an error, so that a Dockerfile change the
// builder would silently ignore fails instead.
func ParseDockerfile(r io.Reader) (*Stage, error) {
	var (
		stage *Stage
		line  strings.Builder
		n     int
	)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		n++
		text := strings.TrimSpace(sc.Text())
		if line.Len() == 0 && (text == "" || strings.HasPrefix(text, "#")) {
			continue
		}
		if cont, ok := strings.CutSuffix(text, "\\"); ok {
			line.WriteString(cont)
			line.WriteByte(' ')
			continue
		}
		line.WriteString(text)
		instr := line.String()
		line.Reset()
		keyword, args, _ := strings.Cut(instr, " ")
		args = strings.TrimSpace(args)
		switch strings.ToUpper(keyword) {
		case "FROM":
			f := strings.Fields(args)
			if len(f) == 0 {
				return nil, fmt.Errorf("line %d: FROM without an image", n)
			}
			stage = &Stage{Base: f[0]}
		default:
			if stage == nil {
				return nil, fmt.Errorf("line %d: %s before the first FROM", n, keyword)
			}
			if err := stage.apply(strings.ToUpper(keyword), args); err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the Dockerfile: %w", err)
	}
	if stage == nil {
		return nil, fmt.Errorf("the Dockerfile has no FROM")
	}
	if len(stage.builderInstructions) > 0 {
		return nil, fmt.Errorf("the final stage uses %s, which this builder does not run", strings.Join(stage.builderInstructions, ", "))
	}
	return stage, nil
}

// ParseDockerfileFile is ParseDockerfile on a file.
func ParseDockerfileFile(path string) (*Stage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := ParseDockerfile(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// builderOnly are instructions that only matter to a builder stage. Seen in the final
// stage they are an error; in an earlier stage they are dropped with that stage.
var builderOnly = map[string]bool{"WORKDIR": true, "RUN": true, "ARG": true, "ENV": true}

func (s *Stage) apply(keyword, args string) error {
	switch keyword {
	case "COPY":
		f := strings.Fields(args)
		from := ""
		for len(f) > 0 && strings.HasPrefix(f[0], "--") {
			if v, ok := strings.CutPrefix(f[0], "--from="); ok {
				from = v
			}
			f = f[1:]
		}
		if len(f) < 2 {
			return fmt.Errorf("COPY %q: want a source and a destination", args)
		}
		dst := f[len(f)-1]
		for _, src := range f[:len(f)-1] {
			s.Copies = append(s.Copies, Copy{From: from, Src: src, Dst: dst})
		}
	case "USER":
		s.User = args
	case "ENTRYPOINT":
		var ep []string
		if err := json.Unmarshal([]byte(args), &ep); err != nil {
			return fmt.Errorf("ENTRYPOINT %s: only the exec form is supported: %w", args, err)
		}
		s.Entrypoint = ep
	default:
		if builderOnly[keyword] {
			// Kept so that a builder stage parses; Build refuses a final stage that used one.
			s.builderInstructions = append(s.builderInstructions, keyword)
			return nil
		}
		return fmt.Errorf("instruction %s is not supported", keyword)
	}
	return nil
}
