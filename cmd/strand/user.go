package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// newUserCmd is "strand user": SCRAM users over the Kafka admin API
// (AlterUserScramCredentials, DescribeUserScramCredentials). The password
// is salted here (kadm derives SaltedPassword); it never crosses the wire
// in the clear and is never stored.
func newUserCmd() *cobra.Command {
	o := &clientOptions{}
	cmd := &cobra.Command{
		Use:   "user",
		Short: "Create, delete and list SCRAM users (SASL)",
		Long: `Create, delete and list the SCRAM users a SASL listener accepts.

The password is read from a prompt when stdin is a terminal, else from stdin
(its first line), so scripts can pipe it:

    strand user create alice                       # prompts twice
    printf '%s\n' "$PASSWORD" | strand user create alice
    strand user list -o json
    strand user delete alice`,
	}
	addClientFlags(cmd, o, true, true)
	cmd.AddCommand(newUserCreateCmd(o), newUserDeleteCmd(o), newUserListCmd(o))
	return cmd
}

var scramMechanisms = map[string]kadm.ScramMechanism{"SCRAM-SHA-256": kadm.ScramSha256, "SCRAM-SHA-512": kadm.ScramSha512}

func parseMechanisms(names []string) ([]kadm.ScramMechanism, error) {
	var out []kadm.ScramMechanism
	for _, n := range names {
		m, ok := scramMechanisms[strings.ToUpper(n)]
		if !ok {
			return nil, usageErr("--mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", n)
		}
		out = append(out, m)
	}
	return out, nil
}

// readPassword prompts on the terminal (twice, without echo) or reads the
// first line of stdin.
func readPassword(cmd *cobra.Command, user string) (string, error) {
	in := cmd.InOrStdin()
	br := bufio.NewReader(in)
	line := func() (string, error) {
		s, err := br.ReadString('\n')
		if err != nil && !(errors.Is(err, io.EOF) && s != "") {
			return "", err
		}
		return strings.TrimRight(s, "\r\n"), nil
	}
	if f, ok := in.(*os.File); ok {
		ask := func(prompt string) (string, bool, error) {
			s, isTerm, err := withoutEcho(int(f.Fd()), func() { fmt.Fprint(cmd.ErrOrStderr(), prompt) }, line)
			if isTerm {
				fmt.Fprintln(cmd.ErrOrStderr())
			}
			return s, isTerm, err
		}
		if p, isTerm, err := ask("Password for " + user + ": "); isTerm {
			if err != nil {
				return "", err
			}
			again, _, err := ask("Again: ")
			if err != nil {
				return "", err
			}
			if again != p {
				return "", usageErr("the passwords differ")
			}
			return p, nil
		}
	}
	p, err := line()
	if err != nil {
		return "", fmt.Errorf("read the password from stdin: %w", err)
	}
	return p, nil
}

// userResult is "strand user create/delete -o json"'s element.
type userResult struct {
	User       string   `json:"user"`
	Mechanisms []string `json:"mechanisms"`
}

func mechanismNames(ms []kadm.ScramMechanism) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.String())
	}
	return out
}

func newUserCreateCmd(o *clientOptions) *cobra.Command {
	var mechNames []string
	var iterations int32
	cmd := &cobra.Command{
		Use:     "create <user>",
		Aliases: []string{"set-password"},
		Short:   "Create a user, or change its password",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			user := args[0]
			mechs, err := parseMechanisms(mechNames)
			if err != nil {
				return err
			}
			if iterations < 4096 || iterations > 16384 {
				return usageErr("--iterations %d: Kafka accepts 4096 to 16384", iterations)
			}
			password, err := readPassword(cmd, user)
			if err != nil {
				return err
			}
			if password == "" {
				return usageErr("empty password")
			}
			return o.adminRun(cmd, func(ctx context.Context, adm *kadm.Client, asJSON bool) error {
				var ups []kadm.UpsertSCRAM
				for _, m := range mechs {
					ups = append(ups, kadm.UpsertSCRAM{User: user, Mechanism: m, Iterations: iterations, Password: password})
				}
				res, err := adm.AlterUserSCRAMs(ctx, nil, ups)
				if err != nil {
					return fmt.Errorf("create user %q: %w", user, err)
				}
				if r := res[user]; r.Err != nil {
					return kafkaError(fmt.Sprintf("cannot create user %q", user), r.Err, &r.ErrMessage)
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), userResult{user, mechanismNames(mechs)})
				}
				fmt.Fprintf(cmd.OutOrStdout(), "user %q can authenticate with %s\n", user, strings.Join(mechanismNames(mechs), " and "))
				return nil
			})
		},
	}
	cmd.Flags().StringArrayVar(&mechNames, "mechanism", []string{"SCRAM-SHA-256", "SCRAM-SHA-512"}, "SCRAM mechanism to store a credential for; repeatable")
	cmd.Flags().Int32Var(&iterations, "iterations", 4096, "PBKDF2 iterations (4096–16384)")
	return cmd
}

func newUserDeleteCmd(o *clientOptions) *cobra.Command {
	var ifExists bool
	cmd := &cobra.Command{
		Use:     "delete <user>",
		Aliases: []string{"rm"},
		Short:   "Delete a user's credentials (its open connections are closed)",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			user := args[0]
			return o.adminRun(cmd, func(ctx context.Context, adm *kadm.Client, asJSON bool) error {
				desc, err := adm.DescribeUserSCRAMs(ctx, user)
				if err != nil {
					return fmt.Errorf("delete user %q: %w", user, err)
				}
				d := desc[user]
				switch {
				case errors.Is(d.Err, kerr.ResourceNotFound) && ifExists:
					return nil
				case errors.Is(d.Err, kerr.ResourceNotFound):
					return fmt.Errorf("no user %q — \"strand user list\" shows the users there are", user)
				case d.Err != nil:
					return kafkaError(fmt.Sprintf("cannot delete user %q", user), d.Err, &d.ErrMessage)
				}
				var dels []kadm.DeleteSCRAM
				var mechs []kadm.ScramMechanism
				for _, ci := range d.CredInfos {
					dels = append(dels, kadm.DeleteSCRAM{User: user, Mechanism: ci.Mechanism})
					mechs = append(mechs, ci.Mechanism)
				}
				res, err := adm.AlterUserSCRAMs(ctx, dels, nil)
				if err != nil {
					return fmt.Errorf("delete user %q: %w", user, err)
				}
				if r := res[user]; r.Err != nil {
					return kafkaError(fmt.Sprintf("cannot delete user %q", user), r.Err, &r.ErrMessage)
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), userResult{user, mechanismNames(mechs)})
				}
				fmt.Fprintf(cmd.OutOrStdout(), "deleted user %q\n", user)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&ifExists, "if-exists", false, "succeed if the user does not exist")
	return cmd
}

// listedUser is "strand user list -o json"'s element.
type listedUser struct {
	User        string           `json:"user"`
	Credentials []listedUserCred `json:"credentials"`
}

type listedUserCred struct {
	Mechanism  string `json:"mechanism"`
	Iterations int32  `json:"iterations"`
}

func newUserListCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "list [user...]",
		Aliases: []string{"ls"},
		Short:   "List users and their SCRAM mechanisms (never a password)",
		RunE: func(cmd *cobra.Command, users []string) error {
			return o.adminRun(cmd, func(ctx context.Context, adm *kadm.Client, asJSON bool) error {
				desc, err := adm.DescribeUserSCRAMs(ctx, users...)
				if err != nil {
					return fmt.Errorf("list users: %w", err)
				}
				out := []listedUser{}
				var errs []error
				for _, d := range desc.Sorted() {
					if d.Err != nil {
						errs = append(errs, kafkaError(fmt.Sprintf("user %q", d.User), d.Err, &d.ErrMessage))
						continue
					}
					u := listedUser{User: d.User}
					for _, ci := range d.CredInfos {
						u.Credentials = append(u.Credentials, listedUserCred{ci.Mechanism.String(), ci.Iterations})
					}
					slices.SortFunc(u.Credentials, func(a, b listedUserCred) int { return strings.Compare(a.Mechanism, b.Mechanism) })
					out = append(out, u)
				}
				if asJSON {
					if err := writeJSON(cmd.OutOrStdout(), out); err != nil {
						return err
					}
					return errors.Join(errs...)
				}
				tw := newTable(cmd.OutOrStdout())
				fmt.Fprintln(tw, "USER\tMECHANISMS")
				for _, u := range out {
					var ms []string
					for _, c := range u.Credentials {
						ms = append(ms, fmt.Sprintf("%s (%d iterations)", c.Mechanism, c.Iterations))
					}
					fmt.Fprintf(tw, "%s\t%s\n", u.User, strings.Join(ms, ", "))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				return errors.Join(errs...)
			})
		},
	}
}
