// Package runtime gives generated Go bindings their memory: the `cabi_realloc` export through
// which the host places a call's arguments in the module's memory, and Allocate for results.
//
// Go's garbage collector does not move objects but frees those no Go pointer refers to. Memory
// handed to the host is known to Go only as an integer address, so it is pinned from allocation
// until the bindings have copied the arguments into Go values (Unpin) or the host has read a
// result (the bindings' post-return functions unpin their pinner).
package runtime

import (
	"runtime"
	"unsafe"
)

// Arguments the host is writing in: pinned until the export has lifted them.
var arguments runtime.Pinner

// Allocate returns size bytes aligned to align (at most 8), pinned in pinner.
func Allocate(pinner *runtime.Pinner, size, align uintptr) unsafe.Pointer {
	if size == 0 {
		return unsafe.Pointer(align)
	}
	if align > 8 {
		panic("alignment above 8 bytes is not supported")
	}
	// Words are 8-byte aligned, which covers every alignment the component model uses.
	words := make([]uint64, (size+7)/8)
	pointer := unsafe.Pointer(&words[0])
	pinner.Pin(pointer)
	return pointer
}

// Unpin releases the arguments of the call being handled, once they are copied.
func Unpin() {
	arguments.Unpin()
}

//go:wasmexport cabi_realloc
func cabiRealloc(old unsafe.Pointer, oldSize, align, newSize uintptr) unsafe.Pointer {
	fresh := Allocate(&arguments, newSize, align)
	if old != nil && oldSize > 0 && newSize > 0 {
		copy(unsafe.Slice((*byte)(fresh), newSize), unsafe.Slice((*byte)(old), min(oldSize, newSize)))
	}
	return fresh
}
