
ByJhÍ8