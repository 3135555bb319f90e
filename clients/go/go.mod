module httpdnsd.example/clients/go

go 1.19
