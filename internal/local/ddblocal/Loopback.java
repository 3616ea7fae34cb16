// Loopback starts DynamoDB Local listening on one address only. DynamoDB Local has no option
// for the address it listens on (its -help lists -port, none for a host): it makes its Jetty
// server with a port alone, which listens on every interface, so a development table would
// be reachable from the network. This starts it as DynamoDB Local's own main does, from the
// same arguments, but sets the address on the server's connector before it starts.
//
// ddblocal runs it with Java's source-file mode (java Loopback.java, Java 11 and later): it
// is compiled in memory as it starts, so no compiled class is kept anywhere.
//
// Usage: java -cp DynamoDBLocal.jar:DynamoDBLocal_lib/* Loopback.java HOST [DynamoDB Local's options]
import java.lang.reflect.Field;
import java.util.Arrays;

import com.amazonaws.services.dynamodbv2.local.main.ServerRunner;
import com.amazonaws.services.dynamodbv2.local.server.DynamoDBProxyServer;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

public class Loopback {
    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: Loopback HOST [DynamoDB Local's options]");
            System.exit(2);
        }
        DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(Arrays.copyOfRange(args, 1, args.length));
        // The Jetty server is a private field of DynamoDB Local's server: there is no other
        // way to reach its connector.
        Field field = DynamoDBProxyServer.class.getDeclaredField("server");
        field.setAccessible(true);
        Server jetty = (Server) field.get(proxy);
        Connector[] connectors = jetty.getConnectors();
        if (connectors.length == 0) {
            throw new IllegalStateException("DynamoDB Local's server has no connector to bind");
        }
        for (Connector c : connectors) {
            ((ServerConnector) c).setHost(args[0]);
        }
        proxy.start();
    }
}
