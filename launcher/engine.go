package launcher

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/toolshelf/toolshelf/config"
)

// engineRun is a container engine's CLI ready to start, and the file its
// run reads the server's variables from (removed once the server stops).
type engineRun struct {
	cmd     *exec.Cmd
	envFile string
}

// engineCommand builds "ENGINE run …" for a server: the CLI with
// toolshelf's own environment (engineEnv), never the server's, and the
// variables the run passes by name (-e NAME, --env NAME), which the CLI
// would take from its own environment, written to a file of toolshelf's
// that only the CLI reads (--env-file), so that they reach the container
// and nothing on the host.
func engineCommand(cfg *Plan, env []string) (*engineRun, error) {
	engine := config.EngineOf(&cfg.ServerConfig)
	args := cfg.Args[1:]
	flags, _, err := config.EngineFlags(engine, args)
	if err != nil {
		return nil, err
	}
	var lines []string
	drop := map[int]bool{}
	for _, f := range flags {
		if f.Flag != "-e" && f.Flag != "--env" || strings.Contains(f.Value, "=") {
			continue
		}
		for i := f.Start; i < f.End; i++ {
			drop[i] = true
		}
		v, ok := lookupEnv(env, f.Value)
		if !ok {
			continue // as the CLI does with a variable it does not have
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, fmt.Errorf("%s run %s %s: the value has a line break, which an engine's variable file cannot hold", engine, f.Flag, f.Value)
		}
		lines = append(lines, f.Value+"="+v)
	}
	run := []string{"run"}
	var file string
	if len(lines) > 0 {
		if file, err = writeEnvFile(lines); err != nil {
			return nil, fmt.Errorf("the server's variables for %s: %w", engine, err)
		}
		run = append(run, "--env-file", file)
	}
	for i, a := range args {
		if !drop[i] {
			run = append(run, a)
		}
	}
	// Found on toolshelf's PATH, not the server's: a PATH in its "env"
	// is for what runs in the container.
	cmd := exec.Command(cfg.Command, run...)
	cmd.Env = engineEnv(os.Environ())
	return &engineRun{cmd: cmd, envFile: file}, nil
}

// writeEnvFile writes lines to a file only toolshelf's user may read, in
// a folder of its own.
func writeEnvFile(lines []string) (string, error) {
	dir, err := os.MkdirTemp("", "toolshelf-env-")
	if err != nil {
		return "", err
	}
	file := filepath.Join(dir, "env")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return file, nil
}

// lookupEnv is a variable's value in an environment list, and whether it
// is there.
func lookupEnv(environ []string, name string) (string, bool) {
	for i := len(environ) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(environ[i], "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}
