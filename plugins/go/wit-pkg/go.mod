// Wharf's own implementation of the small runtime that `wit-bindgen go` output imports (under the
// import path it generates). The Go module proxy reachable here does not serve
// go.bytecodealliance.org/pkg, so plugin projects replace it with this folder.
module go.bytecodealliance.org/pkg

go 1.25
