module httpdns

go 1.19
