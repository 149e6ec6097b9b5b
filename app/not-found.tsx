import { currentUser } from "@/lib/auth/session";
import ConsoleLayout from "./(console)/layout";
import NotFoundMessage from "./(console)/not-found";

/**
 * 404 for an address no route matches. Someone signed in gets it inside the console layout, with
 * the navigation, as for an unknown run; anyone else gets the same message on its own. Either way
 * it links back to the dashboard.
 */
export default async function NotFound() {
  if (await currentUser()) {
    return (
      <ConsoleLayout>
        <NotFoundMessage />
      </ConsoleLayout>
    );
  }
  return (
    <main>
      <NotFoundMessage />
    </main>
  );
}
