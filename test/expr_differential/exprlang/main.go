// exprlang evaluates Argo Rollouts analysis conditions with github.com/expr-lang/expr, the
// engine and version Argo Rollouts uses, so okra's Python evaluator can be compared with it.
//
// Input: one JSON object per line; output: one JSON object per line, in the same order.
//
//	{"expr": "...", "result": <tagged>}  Argo's EvalCondition → {"verdict": bool} or {"error": "..."}
//	{"expr": "...", "env": {"name": <tagged>}}  expr.Compile(expr, expr.Env(env)) and expr.Run
//	                                     → {"value": <tagged>} or {"error": "..."}
//
// The environment and helpers are Argo Rollouts' own (utils/evaluate/evaluate.go, Apache-2.0,
// EvalCondition): result, asInt, asFloat, isNaN, isInf, isNil, default; each condition is
// compiled against that environment with expr.Env, as Argo does.
//
// Tagged values (JSON cannot carry NaN or ±Inf, nor tell float from int):
//
//	{"f": "1.5"|"NaN"|"+Inf"|"-Inf"}   float64
//	{"i": 3}                           int
//	{"s": "x"}  {"b": true}  {"nil": true}
//	{"fv": [tagged float...]}          []float64 (Prometheus vectors, Datadog series)
//	{"iv": [3, 4]}                     []int
//	{"a": [tagged...]}                 []any
//	{"m": {"k": tagged}}               map[string]any
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"strconv"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/file"
)

type tagged struct {
	F   *string           `json:"f"`
	I   *int64            `json:"i"`
	S   *string           `json:"s"`
	B   *bool             `json:"b"`
	Nil bool              `json:"nil"`
	FV  []tagged          `json:"fv"`
	IV  []int             `json:"iv"`
	A   []tagged          `json:"a"`
	M   map[string]tagged `json:"m"`
}

func decode(t tagged) (any, error) {
	switch {
	case t.F != nil:
		return strconv.ParseFloat(*t.F, 64)
	case t.I != nil:
		return int(*t.I), nil
	case t.S != nil:
		return *t.S, nil
	case t.B != nil:
		return *t.B, nil
	case t.Nil:
		return nil, nil
	case t.FV != nil:
		out := make([]float64, len(t.FV))
		for i, e := range t.FV {
			v, err := decode(e)
			if err != nil {
				return nil, err
			}
			f, ok := v.(float64)
			if !ok {
				return nil, fmt.Errorf("fv element %d is not a float", i)
			}
			out[i] = f
		}
		return out, nil
	case t.IV != nil:
		return t.IV, nil
	case t.A != nil:
		out := make([]any, len(t.A))
		for i, e := range t.A {
			v, err := decode(e)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case t.M != nil:
		out := make(map[string]any, len(t.M))
		for k, e := range t.M {
			v, err := decode(e)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	}
	return nil, errors.New("empty tagged value")
}

type request struct {
	Expr   string            `json:"expr"`
	Result tagged            `json:"result"`
	Env    map[string]tagged `json:"env"`
}

type response struct {
	Verdict *bool  `json:"verdict,omitempty"`
	Value   any    `json:"value,omitempty"`
	Error   string `json:"error,omitempty"`
}

// encode is decode's inverse for what expr returns (other types are named, not encoded).
func encode(v any) any {
	switch x := v.(type) {
	case nil:
		return map[string]any{"nil": true}
	case bool:
		return map[string]any{"b": x}
	case string:
		return map[string]any{"s": x}
	case float64:
		return map[string]any{"f": strconv.FormatFloat(x, 'g', -1, 64)}
	case float32:
		return map[string]any{"f": strconv.FormatFloat(float64(x), 'g', -1, 64)}
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return map[string]any{"i": x}
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = encode(e)
		}
		return map[string]any{"m": out}
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array {
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = encode(rv.Index(i).Interface())
		}
		return map[string]any{"a": out}
	}
	return map[string]any{"other": fmt.Sprintf("%T", v)}
}

// evalEnv compiles against env's types and runs, as a plain expr-lang user does.
func evalEnv(env map[string]any, source string) (value any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	program, err := expr.Compile(source, expr.Env(env))
	if err != nil {
		return nil, err
	}
	return expr.Run(program, env)
}

// evalCondition is Argo Rollouts' EvalCondition, with a recover so that a panic in a helper
// (asInt of a bad string) is an error as expr.Run reports it.
func evalCondition(resultValue any, condition string) (verdict bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	env := map[string]any{
		"result":  valueFromPointer(resultValue),
		"asInt":   asInt,
		"asFloat": asFloat,
		"isNaN":   math.IsNaN,
		"isInf":   isInf,
		"isNil":   isNilFunc(resultValue),
		"default": defaultFunc(resultValue),
	}
	unwrapFileErr := func(e error) error {
		if fileErr, ok := e.(*file.Error); ok {
			e = errors.New(fileErr.Message)
		}
		return e
	}
	program, err := expr.Compile(condition, expr.Env(env))
	if err != nil {
		return false, unwrapFileErr(err)
	}
	output, err := expr.Run(program, env)
	if err != nil {
		return false, unwrapFileErr(err)
	}
	switch val := output.(type) {
	case bool:
		return val, nil
	default:
		return false, fmt.Errorf("expected bool, but got %T", val)
	}
}

func isInf(f float64) bool { return math.IsInf(f, 0) }

func asInt(in any) int64 {
	switch i := in.(type) {
	case float64:
		return int64(i)
	case float32:
		return int64(i)
	case int64:
		return i
	case int32:
		return int64(i)
	case int16:
		return int64(i)
	case int8:
		return int64(i)
	case int:
		return int64(i)
	case uint64:
		return int64(i)
	case uint32:
		return int64(i)
	case uint16:
		return int64(i)
	case uint8:
		return int64(i)
	case uint:
		return int64(i)
	case string:
		inAsInt, err := strconv.ParseInt(i, 10, 64)
		if err == nil {
			return inAsInt
		}
		panic(err)
	}
	panic(fmt.Sprintf("asInt() not supported on %v %v", reflect.TypeOf(in), in))
}

func asFloat(in any) float64 {
	switch i := in.(type) {
	case float64:
		return i
	case float32:
		return float64(i)
	case int64:
		return float64(i)
	case int32:
		return float64(i)
	case int16:
		return float64(i)
	case int8:
		return float64(i)
	case int:
		return float64(i)
	case uint64:
		return float64(i)
	case uint32:
		return float64(i)
	case uint16:
		return float64(i)
	case uint8:
		return float64(i)
	case uint:
		return float64(i)
	case string:
		inAsFloat, err := strconv.ParseFloat(i, 64)
		if err == nil {
			return inAsFloat
		}
		panic(err)
	}
	panic(fmt.Sprintf("asFloat() not supported on %v %v", reflect.TypeOf(in), in))
}

func defaultFunc(resultValue any) func(any, any) any {
	return func(_ any, defaultValue any) any {
		if isNil(resultValue) {
			return defaultValue
		}
		return valueFromPointer(resultValue)
	}
}

func isNilFunc(resultValue any) func(any) bool {
	return func(_ any) bool { return isNil(resultValue) }
}

func isNil(in any) (out bool) {
	if in == nil {
		return true
	}
	switch reflect.TypeOf(in).Kind() {
	case reflect.Ptr, reflect.Map, reflect.Array, reflect.Chan, reflect.Slice:
		out = reflect.ValueOf(in).IsNil()
	}
	return
}

func valueFromPointer(in any) (out any) {
	if isNil(in) {
		return
	}
	if reflect.TypeOf(in).Kind() != reflect.Ptr {
		return in
	}
	return reflect.ValueOf(in).Elem().Interface()
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<26)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	for in.Scan() {
		var req request
		var resp response
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintf(os.Stderr, "bad request line: %v\n", err)
			os.Exit(2)
		}
		if req.Env != nil {
			env := map[string]any{}
			for k, t := range req.Env {
				v, err := decode(t)
				if err != nil {
					fmt.Fprintf(os.Stderr, "bad env value %s: %v\n", k, err)
					os.Exit(2)
				}
				env[k] = v
			}
			v, err := evalEnv(env, req.Expr)
			if err != nil {
				resp.Error = err.Error()
			} else {
				resp.Value = encode(v)
			}
		} else {
			result, err := decode(req.Result)
			if err != nil {
				fmt.Fprintf(os.Stderr, "bad result value: %v\n", err)
				os.Exit(2)
			}
			v, err := evalCondition(result, req.Expr)
			if err != nil {
				resp.Error = err.Error()
			} else {
				resp.Verdict = &v
			}
		}
		if err := enc.Encode(resp); err != nil {
			fmt.Fprintf(os.Stderr, "write: %v\n", err)
			os.Exit(2)
		}
		out.Flush() // the caller reads each answer before it sends more

	}
	if err := in.Err(); err != nil {
		fmt.Fprintf(os.Stderr, "read: %v\n", err)
		os.Exit(2)
	}
}
