// Package deploy holds no code: its tests check the deployment files in
// this directory tree and the Dockerfile with the tools that read them
// (promtool, compose-go, kustomize and the Kubernetes API types), and run
// a sharded load into a real PostgreSQL the way the Kubernetes Indexed Job
// runs it.
package deploy
