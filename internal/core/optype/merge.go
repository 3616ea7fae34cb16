package optype

import (
	"errors"
	"fmt"
	"strings"
)

// Merge joins definitions files into one, for a deployment that serves the types of several
// (LONGRUN_TYPES_FILE takes a comma-separated list): a type or a local worker defined in two
// files is an error naming both.
func Merge(files ...*File) (*File, error) {
	out := &File{Local: map[string]LocalWorker{}}
	typeFile, localFile := map[string]string{}, map[string]string{}
	var paths []string
	var errs []error
	for _, f := range files {
		paths = append(paths, f.Path)
		for _, t := range f.Types {
			if first, ok := typeFile[t.Name]; ok {
				errs = append(errs, fmt.Errorf("%s: type %q: name: already defined in %s", f.Path, t.Name, first))
				continue
			}
			typeFile[t.Name] = f.Path
			out.Types = append(out.Types, t)
		}
		for name, w := range f.Local {
			if first, ok := localFile[name]; ok {
				errs = append(errs, fmt.Errorf("%s: local %q: already defined in %s", f.Path, name, first))
				continue
			}
			localFile[name] = f.Path
			out.Local[name] = w
		}
	}
	out.Path = strings.Join(paths, ",")
	return out, errors.Join(errs...)
}

// LoadAll loads the files at paths (Load) and merges them (Merge).
func LoadAll(paths ...string) (*File, error) {
	var files []*File
	var errs []error
	for _, p := range paths {
		f, err := Load(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		files = append(files, f)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, errors.New("optype: no definitions files given")
	}
	return Merge(files...)
}
