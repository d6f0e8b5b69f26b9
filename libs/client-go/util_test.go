package sluice

import "strconv"

func fmtInt(n int) string { return strconv.Itoa(n) }
