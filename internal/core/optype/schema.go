package optype

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"go.yaml.in/yaml/v4"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/longrun-dev/longrun/internal/core/problem"
)

// schemaURL names a type's input schema inside its own compiler; it shows in no message.
const schemaURL = "urn:longrun:input-schema"

const draft2020 = "https://json-schema.org/draft/2020-12/schema"

var english = message.NewPrinter(language.English)

// lineError is a definitions-file problem at a line (0: no line to name).
type lineError struct {
	line int
	msg  string
}

// nodeJSON writes a YAML node as compact JSON, mapping members in the order written, so the
// schema a discovery API shows reads as its author wrote it.
func nodeJSON(buf *bytes.Buffer, n *yaml.Node, depth int) *lineError {
	if depth > 64 {
		return &lineError{n.Line, "nested too deeply"}
	}
	if n.Kind == yaml.AliasNode {
		return nodeJSON(buf, n.Alias, depth+1)
	}
	switch n.Kind {
	case yaml.MappingNode:
		buf.WriteByte('{')
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := deref(n.Content[i])
			if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!null" {
				return &lineError{k.Line, "a mapping key must be a string"}
			}
			if k.ShortTag() == "!!merge" {
				return &lineError{k.Line, "merge keys (<<) are not supported"}
			}
			if seen[k.Value] {
				return &lineError{k.Line, fmt.Sprintf("duplicate key %q", k.Value)}
			}
			seen[k.Value] = true
			if i > 0 {
				buf.WriteByte(',')
			}
			key, _ := json.Marshal(k.Value)
			buf.Write(key)
			buf.WriteByte(':')
			if err := nodeJSON(buf, n.Content[i+1], depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := nodeJSON(buf, c, depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case yaml.ScalarNode:
		var v any
		switch n.ShortTag() {
		case "!!null":
		case "!!str", "!!timestamp":
			// A date written unquoted stays the text it is, as in JSON.
			v = n.Value
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err != nil {
				return &lineError{n.Line, err.Error()}
			}
			v = b
		case "!!int":
			var i any
			if err := n.Decode(&i); err != nil {
				return &lineError{n.Line, fmt.Sprintf("integer %s: %v", n.Value, err)}
			}
			v = i
		case "!!float":
			var f float64
			if err := n.Decode(&f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
				return &lineError{n.Line, fmt.Sprintf("%s is not a JSON number", n.Value)}
			}
			v = f
		default:
			return &lineError{n.Line, fmt.Sprintf("%s values are not JSON", n.ShortTag())}
		}
		b, err := json.Marshal(v)
		if err != nil {
			return &lineError{n.Line, err.Error()}
		}
		buf.Write(b)
	default:
		return &lineError{n.Line, "not a JSON value"}
	}
	return nil
}

func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && i < 64; i++ {
		n = n.Alias
	}
	return n
}

// Keywords of JSON Schema 2020-12 (core, applicator, unevaluated, validation, format,
// content and meta-data vocabularies). JSON Schema ignores any other key, so a misspelled
// "requried" would silently make every member optional: a definition may use only these,
// or extension keys starting "x-".
var (
	schemaKeywords = []string{"$schema", "$id", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor",
		"$vocabulary", "$comment", "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum",
		"minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems",
		"uniqueItems", "maxContains", "minContains", "maxProperties", "minProperties", "required",
		"dependentRequired", "format", "title", "description", "default", "deprecated", "readOnly",
		"writeOnly", "examples", "contentEncoding", "contentMediaType"}
	subschemaKeywords      = []string{"additionalProperties", "items", "contains", "propertyNames", "unevaluatedProperties", "unevaluatedItems", "not", "if", "then", "else", "contentSchema"}
	subschemaListKeywords  = []string{"prefixItems", "allOf", "anyOf", "oneOf"}
	subschemaMapKeywords   = []string{"properties", "patternProperties", "dependentSchemas", "$defs"}
	keywordReplacementHint = map[string]string{"definitions": "$defs", "dependencies": "dependentRequired or dependentSchemas", "additionalItems": "items", "$recursiveRef": "$dynamicRef", "$recursiveAnchor": "$dynamicAnchor"}
)

// assertedFormats are the formats the schema library checks (santhosh-tekuri/jsonschema v6,
// formats.go); a schema may name only these.
var assertedFormats = []string{"date", "date-time", "duration", "email", "hostname", "ipv4", "ipv6", "iri",
	"iri-reference", "json-pointer", "period", "relative-json-pointer", "semver", "time", "uri", "uri-reference",
	"uri-template", "uuid"}

// unknownKeywords reports keys of schema objects that are no 2020-12 keyword, at every place
// a subschema may sit.
func unknownKeywords(n *yaml.Node, at string, depth int) []lineError {
	n = deref(n)
	if n.Kind != yaml.MappingNode || depth > 64 {
		return nil // a boolean schema, or a shape the metaschema reports
	}
	var errs []lineError
	where := at
	if where == "" {
		where = "the root"
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		key := k.Value
		switch {
		case key == "format" && v.Kind == yaml.ScalarNode && !slices.Contains(assertedFormats, v.Value):
			// The library ignores a format it does not know, so a typo would check nothing.
			errs = append(errs, lineError{v.Line, fmt.Sprintf("format %q at %s is not one longrun checks (%s)", v.Value, where, strings.Join(assertedFormats, ", "))})
		case slices.Contains(schemaKeywords, key), strings.HasPrefix(key, "x-"):
		case slices.Contains(subschemaKeywords, key):
			errs = append(errs, unknownKeywords(v, at+"/"+escapeToken(key), depth+1)...)
		case slices.Contains(subschemaListKeywords, key):
			if v.Kind == yaml.SequenceNode {
				for j, c := range v.Content {
					errs = append(errs, unknownKeywords(c, fmt.Sprintf("%s/%s/%d", at, key, j), depth+1)...)
				}
			}
		case slices.Contains(subschemaMapKeywords, key):
			if v.Kind == yaml.MappingNode {
				for j := 0; j+1 < len(v.Content); j += 2 {
					name := deref(v.Content[j]).Value
					errs = append(errs, unknownKeywords(v.Content[j+1], at+"/"+key+"/"+escapeToken(name), depth+1)...)
				}
			}
		case keywordReplacementHint[key] != "":
			errs = append(errs, lineError{k.Line, fmt.Sprintf("%q at %s is not a JSON Schema 2020-12 keyword; use %s", key, where, keywordReplacementHint[key])})
		default:
			errs = append(errs, lineError{k.Line, fmt.Sprintf("unknown keyword %q at %s (extension keys must start with \"x-\")", key, where)})
		}
	}
	return errs
}

// compiledSchema is a type's input schema, compiled once at load.
type compiledSchema struct {
	schema *jsonschema.Schema
	raw    json.RawMessage
	doc    map[string]any
}

// compileSchema turns the input node into a compiled Draft 2020-12 schema that asserts
// formats (so format: date is enforced). It loads nothing from outside the file: a $ref
// must point into the schema itself. doc is returned whenever the node is JSON, so later
// checks can run even when compiling failed.
func compileSchema(n *yaml.Node) (compiledSchema, []lineError) {
	var buf bytes.Buffer
	if err := nodeJSON(&buf, n, 0); err != nil {
		return compiledSchema{}, []lineError{*err}
	}
	out := compiledSchema{raw: buf.Bytes()}
	parsed, err := jsonschema.UnmarshalJSON(bytes.NewReader(out.raw))
	if err != nil {
		return compiledSchema{}, []lineError{{n.Line, err.Error()}}
	}
	errs := unknownKeywords(n, "", 0)
	doc, ok := parsed.(map[string]any)
	if !ok {
		return compiledSchema{}, append(errs, lineError{n.Line, "must be a JSON Schema object declaring type: object"})
	}
	out.doc = doc
	if doc["type"] != "object" {
		errs = append(errs, lineError{n.Line, "the root must declare type: object (an input is a JSON object)"})
	}
	if s, ok := doc["$schema"]; ok && s != draft2020 && s != draft2020+"#" {
		errs = append(errs, lineError{n.Line, fmt.Sprintf("$schema must be %s (or left out)", draft2020)})
	}
	if len(errs) > 0 {
		return out, errs
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(jsonschema.SchemeURLLoader{}) // no scheme: nothing outside the file loads
	if err := c.AddResource(schemaURL, doc); err != nil {
		return out, []lineError{{n.Line, compileMessage(err)}}
	}
	if out.schema, err = c.Compile(schemaURL); err != nil {
		return out, []lineError{{n.Line, compileMessage(err)}}
	}
	return out, checkDefaults(c, doc, "", n.Line)
}

// checkDefaults validates each property's default against the property's own schema, so
// WithDefaults never hands a worker a value admission would have refused.
func checkDefaults(c *jsonschema.Compiler, schema map[string]any, at string, line int) []lineError {
	props, _ := schema["properties"].(map[string]any)
	var errs []lineError
	for _, name := range sortedKeys(props) {
		sub, ok := props[name].(map[string]any)
		if !ok {
			continue
		}
		loc := at + "/properties/" + escapeToken(name)
		if d, ok := sub["default"]; ok {
			sch, err := c.Compile(schemaURL + "#" + loc)
			if err != nil {
				errs = append(errs, lineError{line, compileMessage(err)})
			} else if err := sch.Validate(d); err != nil {
				var details []string
				for _, f := range fieldErrorsAt(err, name) {
					details = append(details, f.Detail)
				}
				errs = append(errs, lineError{line, fmt.Sprintf("%s/default is not valid for its property: %s", loc, strings.Join(details, " "))})
			}
		}
		errs = append(errs, checkDefaults(c, sub, loc, line)...)
	}
	return errs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// compileMessage makes a compile error readable: a metaschema failure lists each leaf.
func compileMessage(err error) string {
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		var ve *jsonschema.ValidationError
		if errors.As(sve.Err, &ve) {
			var leaves []string
			walkLeaves(ve, func(e *jsonschema.ValidationError) {
				leaves = append(leaves, fmt.Sprintf("at %q: %s", jsonPointer(e.InstanceLocation), e.ErrorKind.LocalizedString(english)))
			})
			slices.Sort(leaves)
			return "not a valid JSON Schema: " + strings.Join(slices.Compact(leaves), "; ")
		}
	}
	msg := strings.ReplaceAll(err.Error(), schemaURL+"#", "#")
	return "not a valid JSON Schema: " + strings.ReplaceAll(msg, schemaURL, "the schema")
}

func walkLeaves(e *jsonschema.ValidationError, leaf func(*jsonschema.ValidationError)) {
	if len(e.Causes) == 0 {
		leaf(e)
		return
	}
	for _, c := range e.Causes {
		walkLeaves(c, leaf)
	}
}

func jsonPointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escapeToken(t))
	}
	return b.String()
}

// fieldErrors turns a validation error into one field error per leaf, pointers into the
// request body (/input/...), deduplicated and sorted by pointer.
func fieldErrors(err error) []problem.FieldError { return fieldErrorsAt(err, "The input") }

// fieldErrorsAt is fieldErrors for a value a message calls root when at its top.
func fieldErrorsAt(err error, root string) []problem.FieldError {
	return fieldErrorsUnder(err, root, "/input")
}

// fieldErrorsUnder is fieldErrorsAt for a value at pointer under in the request's body.
func fieldErrorsUnder(err error, root, under string) []problem.FieldError {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []problem.FieldError{{Pointer: under, Detail: root + " is invalid."}}
	}
	var fields []problem.FieldError
	walkLeaves(ve, func(e *jsonschema.ValidationError) {
		at := under + jsonPointer(e.InstanceLocation)
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			for _, m := range k.Missing {
				fields = append(fields, problem.FieldError{Pointer: at + "/" + escapeToken(m), Detail: m + " is required."})
			}
		case *kind.DependentRequired:
			for _, m := range k.Missing {
				fields = append(fields, problem.FieldError{Pointer: at + "/" + escapeToken(m), Detail: fmt.Sprintf("%s is required when %s is given.", m, k.Prop)})
			}
		case *kind.AdditionalProperties:
			for _, p := range k.Properties {
				fields = append(fields, problem.FieldError{Pointer: at + "/" + escapeToken(p), Detail: fmt.Sprintf("%q is not a field of this operation type.", p)})
			}
		default:
			name := root
			if n := len(e.InstanceLocation); n > 0 {
				name = e.InstanceLocation[n-1]
			}
			fields = append(fields, problem.FieldError{Pointer: at, Detail: leafDetail(name, e.ErrorKind)})
		}
	})
	return sortFields(fields)
}

func sortFields(fields []problem.FieldError) []problem.FieldError {
	slices.SortFunc(fields, func(a, b problem.FieldError) int {
		if c := strings.Compare(a.Pointer, b.Pointer); c != 0 {
			return c
		}
		return strings.Compare(a.Detail, b.Detail)
	})
	return slices.Compact(fields)
}

// leafDetail says what is wrong with the member name in a sentence a caller can act on;
// a kind without a sentence of its own gets the library's English message.
func leafDetail(name string, k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Type:
		var want []string
		for _, w := range k.Want {
			want = append(want, article(w))
		}
		return fmt.Sprintf("%s must be %s, not %s.", name, strings.Join(want, " or "), article(k.Got))
	case *kind.Enum:
		var want []string
		for _, w := range k.Want {
			want = append(want, showValue(w))
		}
		if len(want) == 1 {
			return fmt.Sprintf("%s must be %s.", name, want[0])
		}
		return fmt.Sprintf("%s must be one of %s.", name, strings.Join(want, ", "))
	case *kind.Const:
		return fmt.Sprintf("%s must be %s.", name, showValue(k.Want))
	case *kind.Format:
		return fmt.Sprintf("%s must be %s.", name, formatNoun(k.Want))
	case *kind.Minimum:
		return fmt.Sprintf("%s must be at least %s.", name, showRat(k.Want))
	case *kind.Maximum:
		return fmt.Sprintf("%s must be at most %s.", name, showRat(k.Want))
	case *kind.ExclusiveMinimum:
		return fmt.Sprintf("%s must be greater than %s.", name, showRat(k.Want))
	case *kind.ExclusiveMaximum:
		return fmt.Sprintf("%s must be less than %s.", name, showRat(k.Want))
	case *kind.MultipleOf:
		return fmt.Sprintf("%s must be a multiple of %s.", name, showRat(k.Want))
	case *kind.MinLength:
		return fmt.Sprintf("%s must be at least %d characters long.", name, k.Want)
	case *kind.MaxLength:
		return fmt.Sprintf("%s must be at most %d characters long.", name, k.Want)
	case *kind.Pattern:
		return fmt.Sprintf("%s must match the pattern %s.", name, k.Want)
	case *kind.MinItems:
		return fmt.Sprintf("%s must have at least %d items.", name, k.Want)
	case *kind.MaxItems:
		return fmt.Sprintf("%s must have at most %d items.", name, k.Want)
	case *kind.MinProperties:
		return fmt.Sprintf("%s must have at least %d members.", name, k.Want)
	case *kind.MaxProperties:
		return fmt.Sprintf("%s must have at most %d members.", name, k.Want)
	case *kind.UniqueItems:
		return fmt.Sprintf("%s must not repeat an item (items %d and %d are equal).", name, k.Duplicates[0], k.Duplicates[1])
	case *kind.FalseSchema:
		return fmt.Sprintf("%s is not allowed.", name)
	}
	return fmt.Sprintf("%s: %s.", name, k.LocalizedString(english))
}

func article(jsonType string) string {
	switch jsonType {
	case "integer", "object", "array":
		return "an " + jsonType
	case "null":
		return "null"
	}
	return "a " + jsonType
}

func showValue(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func showRat(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// formatNoun describes what a value of a format looks like.
func formatNoun(format string) string {
	switch format {
	case "date":
		return "a calendar date written YYYY-MM-DD"
	case "date-time":
		return "a date and time written as in RFC 3339 (YYYY-MM-DDThh:mm:ssZ)"
	case "time":
		return "a time written as in RFC 3339 (hh:mm:ssZ)"
	case "duration":
		return "an ISO 8601 duration such as P1DT2H"
	case "email", "idn-email":
		return "an email address"
	case "hostname", "idn-hostname":
		return "a host name"
	case "ipv4":
		return "an IPv4 address"
	case "ipv6":
		return "an IPv6 address"
	case "uri", "iri":
		return "an absolute URI"
	case "uri-reference", "iri-reference":
		return "a URI reference"
	case "uuid":
		return "a UUID"
	case "regex":
		return "a regular expression"
	case "json-pointer":
		return "a JSON pointer"
	}
	return "a valid " + format
}
