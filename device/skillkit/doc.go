// Package skillkit is what a Chorus skill written in Go imports: it reads the
// environment the agent gives a skill process (SKILL_MANAGER §2), connects to
// the device's bus with the skill's own credentials, and runs the skill until
// the agent stops it.
//
//	func main() {
//		err := skillkit.Run(context.Background(), func(s *skillkit.Skill) error {
//			_, err := s.Bus().On("my.skill.ping", func(ctx context.Context, d bus.Delivery) { ... })
//			return err
//		})
//		...
//	}
//
// Run announces readiness (chorus.skill.ready) only after setup returned, so
// a skill whose SKILL.md says "ready: message" is never reported loaded
// before its handlers are subscribed.
package skillkit
