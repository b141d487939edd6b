module okra.invalid/test/expr_differential/exprlang

go 1.26.0

require github.com/expr-lang/expr v1.17.7
