package protocol

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// task/output reads a task's own log by offset; no param may name a file,
// so the method cannot be pointed outside the task's data. A new field
// here has to be checked against that.
func TestTaskOutputTakesNoPath(t *testing.T) {
	var names []string
	typ := reflect.TypeFor[TaskOutputParams]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
	}
	if want := []string{"id", "offset", "limit"}; !slices.Equal(names, want) {
		t.Errorf("task/output params are %v, want %v", names, want)
	}
}
