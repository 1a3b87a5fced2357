
ByJf.f.f.f.f.f.