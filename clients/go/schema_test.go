package httpdns

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// schema is the part of a JSON schema the results use.
type schema struct {
	Type       any                `json:"type"`
	Required   []string           `json:"required"`
	Properties map[string]*schema `json:"properties"`
	Items      *schema            `json:"items"`
}

// types is the schema's type and whether null is one of them.
func (s *schema) types() (string, bool) {
	switch value := s.Type.(type) {
	case string:
		return value, false
	case []any:
		kind, null := "", false
		for _, item := range value {
			if item == "null" {
				null = true
			} else {
				kind, _ = item.(string)
			}
		}
		return kind, null
	}
	return "", false
}

var rawMessage = reflect.TypeOf(json.RawMessage{})

// holds checks that Go type goType has exactly the members of s, recursively, each of the
// documented type: a nullable member is a pointer (or a slice, map or raw JSON, which hold
// null as nil), an optional one a pointer, slice, map or omitempty field.
func holds(t *testing.T, where string, s *schema, goType reflect.Type) {
	kind, _ := s.types()
	for goType.Kind() == reflect.Pointer {
		goType = goType.Elem()
	}
	switch kind {
	case "object":
		if len(s.Properties) == 0 {
			if goType.Kind() != reflect.Map && goType != rawMessage {
				t.Errorf("%s: an object without members is %v, not a map or raw JSON", where, goType)
			}
			return
		}
		if goType.Kind() != reflect.Struct {
			t.Errorf("%s: an object is %v", where, goType)
			return
		}
		fields := map[string]reflect.StructField{}
		for i := 0; i < goType.NumField(); i++ {
			field := goType.Field(i)
			name, _, _ := strings.Cut(field.Tag.Get("json"), ",")
			if field.IsExported() && name != "-" {
				fields[name] = field
			}
		}
		required := map[string]bool{}
		for _, name := range s.Required {
			required[name] = true
		}
		for name, member := range s.Properties {
			label := where + "." + name
			field, ok := fields[name]
			if !ok {
				t.Errorf("%s: no field of %v", label, goType)
				continue
			}
			delete(fields, name)
			_, null := member.types()
			nilable := field.Type.Kind() == reflect.Pointer || field.Type.Kind() == reflect.Slice ||
				field.Type.Kind() == reflect.Map || field.Type == rawMessage
			if null && !nilable {
				t.Errorf("%s: may be null, but %s is %v", label, field.Name, field.Type)
			}
			if !null && required[name] && field.Type.Kind() == reflect.Pointer {
				t.Errorf("%s: always there and never null, but %s is %v", label, field.Name, field.Type)
			}
			if !required[name] && !nilable && !strings.Contains(field.Tag.Get("json"), ",omitempty") {
				t.Errorf("%s: optional, but %s is neither nil-able nor omitempty", label, field.Name)
			}
			holds(t, label, member, field.Type)
		}
		for name := range fields {
			t.Errorf("%s.%s: the document has no such member", where, name)
		}
	case "array":
		if goType.Kind() != reflect.Slice {
			t.Errorf("%s: an array is %v", where, goType)
		} else if s.Items != nil && goType.Elem() != rawMessage {
			holds(t, where+"[]", s.Items, goType.Elem())
		}
	case "string":
		if goType.Kind() != reflect.String {
			t.Errorf("%s: a string is %v", where, goType)
		}
	case "integer":
		switch goType.Kind() {
		case reflect.Int, reflect.Int64:
		default:
			t.Errorf("%s: an integer is %v", where, goType)
		}
	case "number":
		if goType.Kind() != reflect.Float64 {
			t.Errorf("%s: a number is %v", where, goType)
		}
	case "boolean":
		if goType.Kind() != reflect.Bool {
			t.Errorf("%s: a boolean is %v", where, goType)
		}
	default:
		t.Errorf("%s: type %v is not one this test knows", where, s.Type)
	}
}

// Every result member of the OpenRPC document is a typed field of the method's result type.
func TestEveryResultMemberOfTheDocumentIsATypedField(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "rpc-schema", "httpdnsd.openrpc.json"))
	if err != nil {
		t.Fatal(err)
	}
	var document struct {
		Methods []struct {
			Name   string
			Result struct{ Schema *schema }
		}
	}
	if err := json.Unmarshal(data, &document); err != nil {
		t.Fatal(err)
	}
	results := map[string]any{
		"resolve": Resolution{}, "reverse": ReverseLookup{}, "forget": ForgetResult{},
		"getCookieHeader": CookieHeaderResult{}, "handleSetCookie": StoredCookies{},
		"deleteCookies": DeleteCookiesResult{}, "listCookies": ListCookiesResult{},
		"importCookies": ImportCookiesResult{}, "exportCookies": ExportCookiesResult{}, "flushCache": FlushCacheResult{},
		"status": Status{}, "showCache": ShowCacheResult{}, "statistics": Statistics{},
		"resetStatistics": ResetStatisticsResult{}, "metrics": MetricsResult{}, "monitor": MonitorResult{},
		"rpc.discover": DiscoverResult{},
	}
	for _, method := range document.Methods {
		result, ok := results[method.Name]
		if !ok {
			t.Errorf("%s: no result type", method.Name)
			continue
		}
		delete(results, method.Name)
		holds(t, method.Name, method.Result.Schema, reflect.TypeOf(result))
	}
	for name := range results {
		t.Errorf("%s: not a method of the document", name)
	}
}
