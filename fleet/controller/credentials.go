package controller

import (
	"context"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet"
)

// AddIntegration creates an integration credential (an observer such as Home
// Assistant, allowed to emit the bus types in allow) and returns its MQTT
// credentials: the only time the secret is shown.
func (c *Controller) AddIntegration(ctx context.Context, actor, name string, allow []string) (*fleet.Integration, configs.Credential, error) {
	secret, err := broker.NewSecret()
	if err != nil {
		return nil, configs.Credential{}, err
	}
	i := &fleet.Integration{Name: name, SecretHash: broker.HashSecret(secret), Allow: allow}
	if err := c.store.CreateIntegration(ctx, i); err != nil {
		return nil, configs.Credential{}, err
	}
	c.audit(ctx, actor, "integration.add", "integration/"+name, map[string]any{"allow": i.Allow})
	_ = c.registryChanged(ctx)
	creds := configs.Credential{Username: "integration:" + name, Password: secret}
	c.cfg.SecretIssued(ctx, creds.Username, secret)
	return i, creds, nil
}

// RemoveIntegration deletes an integration; connected clients using it are disconnected.
func (c *Controller) RemoveIntegration(ctx context.Context, actor, name string) error {
	if err := c.store.DeleteIntegration(ctx, name); err != nil {
		return err
	}
	c.audit(ctx, actor, "integration.remove", "integration/"+name, nil)
	return c.registryChanged(ctx)
}

// ListIntegrations returns every integration.
func (c *Controller) ListIntegrations(ctx context.Context) ([]*fleet.Integration, error) {
	return c.store.ListIntegrations(ctx)
}

// AddOperator creates an operator MQTT credential (for `chorus bus`).
func (c *Controller) AddOperator(ctx context.Context, actor, name string) (*fleet.Operator, configs.Credential, error) {
	secret, err := broker.NewSecret()
	if err != nil {
		return nil, configs.Credential{}, err
	}
	o := &fleet.Operator{Name: name, SecretHash: broker.HashSecret(secret)}
	if err := c.store.CreateOperator(ctx, o); err != nil {
		return nil, configs.Credential{}, err
	}
	c.audit(ctx, actor, "operator.add", "operator/"+name, nil)
	_ = c.registryChanged(ctx)
	creds := configs.Credential{Username: "operator:" + name, Password: secret}
	c.cfg.SecretIssued(ctx, creds.Username, secret)
	return o, creds, nil
}

// RemoveOperator deletes an operator credential.
func (c *Controller) RemoveOperator(ctx context.Context, actor, name string) error {
	if err := c.store.DeleteOperator(ctx, name); err != nil {
		return err
	}
	c.audit(ctx, actor, "operator.remove", "operator/"+name, nil)
	return c.registryChanged(ctx)
}

// ListOperators returns every operator credential.
func (c *Controller) ListOperators(ctx context.Context) ([]*fleet.Operator, error) {
	return c.store.ListOperators(ctx)
}
