// Package types holds the generic values of the component model that generated Go bindings use:
// option, result, tuples and unit.
package types

const (
	OptionNone uint8 = 0
	OptionSome uint8 = 1
	ResultOk   uint8 = 0
	ResultErr  uint8 = 1
)

// Option is a value that may be absent.
type Option[T any] struct {
	present bool
	value   T
}

func Some[T any](value T) Option[T] { return Option[T]{present: true, value: value} }
func None[T any]() Option[T]        { return Option[T]{} }

func (o Option[T]) Tag() uint8 {
	if o.present {
		return OptionSome
	}
	return OptionNone
}

// Some returns the value; it panics on an absent one.
func (o Option[T]) Some() T {
	if !o.present {
		panic("Some() called on an empty option")
	}
	return o.value
}

func (o Option[T]) IsSome() bool { return o.present }

// Result is a success value or an error value.
type Result[T any, E any] struct {
	failed bool
	ok     T
	err    E
}

func Ok[T any, E any](value T) Result[T, E] { return Result[T, E]{ok: value} }
func Err[T any, E any](err E) Result[T, E]  { return Result[T, E]{failed: true, err: err} }

func (r Result[T, E]) Tag() uint8 {
	if r.failed {
		return ResultErr
	}
	return ResultOk
}

func (r Result[T, E]) Ok() T {
	if r.failed {
		panic("Ok() called on an error result")
	}
	return r.ok
}

func (r Result[T, E]) Err() E {
	if !r.failed {
		panic("Err() called on a success result")
	}
	return r.err
}

func (r Result[T, E]) IsErr() bool { return r.failed }

type Tuple2[A any, B any] struct {
	F0 A
	F1 B
}

type Tuple3[A any, B any, C any] struct {
	F0 A
	F1 B
	F2 C
}

// Unit is the empty value of `result<_, E>`.
type Unit struct{}
