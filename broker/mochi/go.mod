module github.com/mochi-mqtt/server/v2

go 1.21

require (
	github.com/gorilla/websocket v1.5.3
	github.com/jinzhu/copier v0.3.5
	github.com/rs/xid v1.4.0
	github.com/stretchr/testify v1.8.1
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
